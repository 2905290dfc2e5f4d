// Draws the book's interactive figures (transformer_lib/figures.py) in the reader's browser.
//
// A figure is stored in the page as <div class="vega-figure"> holding its Vega-Lite spec, data
// included, as JSON in a <script type="application/json"> (inert: it does not run). This script,
// loaded after Vega, Vega-Lite and vega-embed (all served by the site itself, see `make book`),
// finds every such div and draws its chart with vega-embed: no kernel, no network.
(function () {
  "use strict";

  function showError(figure, error) {
    figure.classList.add("vega-figure-error");
    const message = document.createElement("p");
    message.textContent = "This figure could not be drawn: " + error;
    figure.appendChild(message);
    console.error("vega-figure " + (figure.dataset.figure || "") + ": " + error);
  }

  function draw(figure) {
    let spec;
    try {
      spec = JSON.parse(figure.querySelector('script[type="application/json"]').textContent);
    } catch (error) {
      showError(figure, error);
      return;
    }
    const fallback = figure.querySelector(".vega-figure-fallback");
    if (fallback) fallback.remove();
    const chart = document.createElement("div");
    figure.appendChild(chart);
    vegaEmbed(chart, spec, {mode: "vega-lite", renderer: "svg", actions: false})
      .then(function (result) { figure.vegaView = result.view; })  // for the tests and the console
      .catch(function (error) { showError(figure, error); });
  }

  function drawAll() {
    document.querySelectorAll("div.vega-figure").forEach(draw);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", drawAll);
  } else {
    drawAll();
  }
})();
