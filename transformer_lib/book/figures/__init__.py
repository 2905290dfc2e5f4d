"""Interactive figures for the book: the data is computed here, in Python, and goes into the page;
the interaction (a slider, a menu, a tooltip) runs in the reader's browser, with no kernel behind it.

Each function returns an `InteractiveFigure` (interactive.py), an Altair (Vega-Lite) chart that a
notebook cell shows by ending with it:

    positional_encoding_figure  §3.5   pick a dimension: its curve, and its column of the heatmap
    masks_figure                §3.2.3 pick a sequence of a padded batch: its three masks
    schedule_figure             §5.3   pick d_model and warmup_steps: the learning rate over the steps
    training_curves_figure             a training history: one panel per metric, the epoch marked
    attention_figure            §3.2   pick a sentence, a kind of attention, a layer and a head
    attention_examples                 the data of attention_figure, from a translator and sentences

each in the module of its name (attention.py holds the last two).

How a figure reaches the page: in the notebook's stored output, its HTML is a
`<div class="vega-figure">` holding the Vega-Lite spec as JSON (data included, no URL, no script
to run); the site's own JavaScript (book_js/vega-figures.js, served with Vega from the site itself)
finds every such div and draws it. JupyterLab draws the `application/vnd.vegalite.v5+json` copy
natively. In Colab the figure uses Altair's own renderer (Vega from a CDN).

This package needs Altair (`pip install altair`); `import transformer_lib` (and `transformer_lib.book`)
does not import it.
"""

from transformer_lib.book.figures.attention import (
    ATTENTION_KINDS,
    attention_examples,
    attention_figure,
    attention_weights_of_every_kind,
)
from transformer_lib.book.figures.interactive import VEGALITE_MIME_TYPE, InteractiveFigure, figure_html
from transformer_lib.book.figures.masks import MASK_NAMES, masks_figure
from transformer_lib.book.figures.positional_encoding import positional_encoding_figure
from transformer_lib.book.figures.schedule import schedule_figure
from transformer_lib.book.figures.training_curves import training_curves_figure

__all__ = [
    "ATTENTION_KINDS", "MASK_NAMES", "VEGALITE_MIME_TYPE", "InteractiveFigure",
    "attention_examples", "attention_figure", "attention_weights_of_every_kind", "figure_html",
    "masks_figure", "positional_encoding_figure", "schedule_figure", "training_curves_figure",
]
