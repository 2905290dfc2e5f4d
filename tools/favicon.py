"""Draw the site's icon, book_static/favicon.png (64 x 64): a 4 x 4 attention map, each row a query's
weights over four keys, summing to 1, in the magma colours of the book's heatmaps. Our own drawing:

    python tools/favicon.py
"""

from pathlib import Path

import numpy as np
from matplotlib import colormaps
from PIL import Image

OUT = Path(__file__).resolve().parent.parent / "book_static" / "favicon.png"
# each query looks mostly at one key (a near-diagonal map, as cross-attention of a good translator)
WEIGHTS = np.array([[0.70, 0.20, 0.06, 0.04],
                    [0.15, 0.65, 0.15, 0.05],
                    [0.05, 0.10, 0.60, 0.25],
                    [0.02, 0.08, 0.20, 0.70]])


def draw(size: int = 64, gap: int = 2) -> Image.Image:
    cell = (size - 5 * gap) // 4
    image = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    colours = colormaps["magma"]
    for row in range(4):
        for column in range(4):
            r, g, b, _ = colours(0.15 + 0.85 * WEIGHTS[row, column])
            left, top = gap + column * (cell + gap), gap + row * (cell + gap)
            tile = Image.new("RGBA", (cell, cell), (int(255 * r), int(255 * g), int(255 * b), 255))
            image.paste(tile, (left, top))
    return image


if __name__ == "__main__":
    draw().save(OUT)
    print(f"wrote {OUT}")
