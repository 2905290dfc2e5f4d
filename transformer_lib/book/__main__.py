"""`python -m transformer_lib.book ...` says where the maintainers' tool that runs and refreshes the stored
chapters is: `python -m tools.notebooks ...`, from the repository's root. The readers' package holds none of it."""

import sys

if __name__ == "__main__":
    sys.exit("Running and refreshing the stored chapters is the maintainers' tool, outside the library. From the "
             f"repository's root, run:  python -m tools.notebooks {' '.join(sys.argv[1:])}".rstrip())
