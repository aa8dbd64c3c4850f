"""Prints the fuzzer's throughput (programs per second) in pytest's terminal summary; it
travels through pytest-xdist as a user property of the test report."""


def pytest_terminal_summary(terminalreporter):
    lines = []
    for reports in terminalreporter.stats.values():
        for rep in reports:
            for name, value in getattr(rep, "user_properties", ()):
                if name == "fuzz" and getattr(rep, "when", "call") == "call":
                    lines.append(f"{rep.nodeid}: {value}")
    if lines:
        terminalreporter.write_sep("-", "differential fuzzer")
        for line in sorted(set(lines)):
            terminalreporter.write_line(line)
