"""The differential fuzzer: random programs from the op table, run on torch and retrograd."""
