"""`python -m transformer_lib.book [--listings | --diagrams | --exercises] chapters/*.ipynb` (see the
package's docstring): no option runs the whole chapters."""

import sys

from transformer_lib.book import execute, refresh_diagrams, refresh_exercises, refresh_listings

if sys.argv[1:2] == ["--listings"]:
    print(f"{refresh_listings(sys.argv[2:])} listing(s) refreshed.")
elif sys.argv[1:2] == ["--diagrams"]:
    print(f"{refresh_diagrams(sys.argv[2:])} diagram(s) refreshed.")
elif sys.argv[1:2] == ["--exercises"]:
    print(f"{refresh_exercises(sys.argv[2:])} exercise cell(s) refreshed.")
else:
    execute(sys.argv[1:])
