"""`python -m nova`: the same command as `nova`."""

from nova.cli.main import main

if __name__ == "__main__":
    main()
