"""Chapter 8's translator in the published page: the HTML of the widget that book_js/browser-translator.js
brings to life on the book's site, where it runs the exported model (`transformer_lib.export.web`,
`book_static/translator/`) in the reader's browser.

    browser_translator()   # the last line of a cell: the widget, with what the manifest says of the model

In a notebook (Jupyter, Colab) no script drives it: it says so, and points to the translation box above.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

DEFAULT_SENTENCE = "Где находится ближайшая станция метро?"
BEAM_SIZES = range(1, 9)


class BrowserTranslator:
    """The widget as a cell's output (text/html), built from the exported model's manifest."""

    def __init__(self, manifest: dict, sentence: str = DEFAULT_SENTENCE, beam_size: int = 4):
        if beam_size not in BEAM_SIZES:
            raise ValueError(f"beam_size must be 1 (greedy) to 8, got {beam_size!r}.")
        self.manifest, self.sentence, self.beam_size = manifest, sentence, beam_size

    def about(self) -> str:
        """One line on the model: its run and test score as the export recorded them, and its size."""
        about = self.manifest.get("about", {})
        size = self.manifest["model"]
        parts = [about.get("run", "chapter 7's translator"),
                 f"{size['num_layers']} layers of width {size['d_model']}, {size['num_heads']} heads",
                 f"weights {self.manifest['weights'].split(',')[0]}"]
        if "test_bleu" in about:
            parts.append(f"Tatoeba test BLEU {about['test_bleu']:.2f} (beam 4, alpha {self.manifest.get('beam_alpha', 0.6):g}, "
                         "in Python)")
        return "; ".join(parts) + "."

    def _repr_html_(self) -> str:
        options = "".join(f'<option value="{k}"{" selected" if k == self.beam_size else ""}>'
                          f'{"greedy" if k == 1 else f"beam {k}"}</option>' for k in BEAM_SIZES)
        return (
            '<div class="browser-translator">'
            f'<p class="browser-translator-about">{html.escape(self.about())}</p>'
            f'<textarea rows="2" lang="ru" aria-label="Russian text to translate">{html.escape(self.sentence)}</textarea>'
            f'<p><label>Search <select class="method">{options}</select></label> '
            '<button class="translate" type="button">Translate</button></p>'
            '<p class="status" role="status"></p>'
            '<p class="translation" lang="en" aria-live="polite"></p>'
            '<p class="pieces"></p><p class="timing"></p><div class="attention"></div>'
            '<p class="browser-translator-offline">This translator runs on the book\'s published page, in the '
            "reader's browser; in a notebook, use the translation box above.</p>"
            "</div>"
        )

    def __repr__(self) -> str:
        return f"Translator in the page: {self.about()}"


def browser_translator(folder: str | Path = "book_static/translator", sentence: str = DEFAULT_SENTENCE,
                       beam_size: int = 4) -> BrowserTranslator | NoBrowserTranslator:
    """The widget for the model exported into `folder`: a folder that holds its `manifest.json`, or a
    path in the course (the default) looked for from the current folder upwards as `course_file` does.
    Where there is no manifest (a fresh runtime, offline, that exported nothing), a note saying so."""
    from transformer_lib.book.course_files import course_file

    manifest = Path(folder) / "manifest.json"
    try:
        if not manifest.is_file():
            if Path(folder).is_absolute():
                raise FileNotFoundError(f"{folder} holds no exported translator (no manifest.json).")
            manifest = course_file(f"{Path(folder).as_posix()}/manifest.json")
        return BrowserTranslator(json.loads(manifest.read_text(encoding="utf-8")), sentence, beam_size)
    except FileNotFoundError as error:
        return NoBrowserTranslator(str(error))


class NoBrowserTranslator:
    """What the cell shows where no exported translator can be found: why, and where the widget runs."""

    def __init__(self, reason: str):
        self.reason = reason

    def _repr_html_(self) -> str:
        return (f'<p class="browser-translator-offline">{html.escape(repr(self))}</p>')

    def __repr__(self) -> str:
        return ("The translator in the page runs on the book's published site, in the reader's browser; here "
                f"there is no exported model to describe ({self.reason}). Use the translation box above.")
