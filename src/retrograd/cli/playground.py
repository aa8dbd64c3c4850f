"""``retrograd playground [--build DIR] [--port N]``: build the in-browser playground and serve it."""


def main(argv):
    from ..playground import main as run
    return run(argv)
