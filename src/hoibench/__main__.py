"""``python -m hoibench`` runs the ``hoibench`` command."""

from hoibench.cli import main

if __name__ == "__main__":
    main()
