"""`python -m transformer_lib.book [--listings | --diagrams] chapters/*.ipynb` (see the package's docstring)."""

import sys

from transformer_lib.book import execute, refresh_diagrams, refresh_listings

if sys.argv[1:2] == ["--listings"]:
    print(f"{refresh_listings(sys.argv[2:])} listing(s) refreshed.")
elif sys.argv[1:2] == ["--diagrams"]:
    print(f"{refresh_diagrams(sys.argv[2:])} diagram(s) refreshed.")
else:
    execute(sys.argv[1:])
