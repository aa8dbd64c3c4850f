"""The ``retrograd`` command: ``retrograd <command> [args]`` (also ``python -m retrograd``)."""
import importlib
import sys

# Each command lives in retrograd/cli/<module>.py and exposes main(argv) -> exit code.
COMMANDS = {
    "tour": ("tour", "replay the autograd tutorial's examples"),
    "demo": ("demo", "train a model end to end (retrograd demo mnist)"),
    "run": ("run", "run an unmodified PyTorch script on retrograd"),
    "graph": ("graph", "run a script and draw the graph of its result"),
    "bench": ("bench", "time the benchmark suite beside PyTorch (retrograd bench --help)"),
    "playground": ("playground", "the examples in the browser, on Pyodide (retrograd playground --help)"),
}


def _usage():
    lines = ["usage: retrograd <command> [args]", "", "commands:"]
    lines += [f"  {name:<8} {help_}" for name, (_, help_) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"retrograd: unknown command '{name}'\n\n{_usage()}", file=sys.stderr)
        return 2
    try:
        mod = importlib.import_module(f"retrograd.cli.{COMMANDS[name][0]}")
    except ModuleNotFoundError as e:
        if e.name == f"retrograd.cli.{COMMANDS[name][0]}":
            print(f"retrograd: the '{name}' command is not available in this build", file=sys.stderr)
            return 2
        raise
    return mod.main(rest) or 0


if __name__ == "__main__":
    sys.exit(main())
