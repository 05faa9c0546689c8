"""What every command-line error must look like."""


def one_line_error(err: str) -> str:
    """The error line of ``err`` and its fix line, if any; asserts the CLI's shape: no
    traceback, exactly one line starting with ``error:``, at most one ``  fix:`` line after
    it and nothing else after."""
    assert "Traceback" not in err, err
    lines = err.rstrip("\n").splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("error:")]
    assert len(starts) == 1, err
    tail = lines[starts[0] + 1 :]
    assert len(tail) <= 1 and all(line.startswith("  fix: ") for line in tail), err
    return "\n".join(lines[starts[0] :])
