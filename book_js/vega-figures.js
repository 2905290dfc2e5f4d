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

  // The same figure for a column narrower than it (a phone): panels side by side go one under the
  // other, facets and wrapped panels take one column, legends go below their plot, and no plot is
  // wider than the column. Plots sized by a step per category (heatmaps) keep their size.
  function narrowLayout(spec, available) {
    const narrow = JSON.parse(JSON.stringify(spec));
    const plotWidth = Math.max(120, available - 110);  // room for the y axis, its title and padding
    (function fit(node) {
      if (!node || typeof node !== "object") return;
      if (node.hconcat) { node.vconcat = node.hconcat; delete node.hconcat; }
      if (typeof node.columns === "number") node.columns = 1;
      if (node.facet && node.facet.column) { node.facet.row = node.facet.column; delete node.facet.column; }
      if (typeof node.width === "number" && node.width > plotWidth) node.width = plotWidth;
      ["vconcat", "concat", "layer"].forEach(function (key) { (node[key] || []).forEach(fit); });
      if (node.spec) fit(node.spec);
    })(narrow);
    narrow.config = Object.assign({}, narrow.config);
    narrow.config.legend = Object.assign({}, narrow.config.legend, {orient: "bottom"});
    narrow.config.title = Object.assign({}, narrow.config.title, {fontSize: 11, limit: available - 40});
    return narrow;
  }

  function embed(figure, chart, spec) {
    return vegaEmbed(chart, spec, {mode: "vega-lite", renderer: "svg", actions: false})
      .then(function (result) { figure.vegaView = result.view; return result; });  // for the tests and the console
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
    const available = figure.getBoundingClientRect().width;
    embed(figure, chart, spec)
      .then(function (result) {
        const drawn = chart.querySelector("svg.marks");
        if (!drawn || drawn.getBoundingClientRect().width <= available + 1) return;
        result.finalize();  // too wide for this column: draw it again, laid out for a narrow one
        chart.textContent = "";
        return embed(figure, chart, narrowLayout(spec, available));
      })
      .then(function () { figure.classList.add("vega-figure-drawn"); })  // laid out for good
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
