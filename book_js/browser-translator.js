// The translator in the page (chapter 8): chapter 7's model, exported by
// `python -m transformer_lib export-web` (transformer_lib/web.py) as two ONNX graphs, run by
// onnxruntime-web in the reader's browser, with the run's own SentencePiece models compiled to
// WebAssembly. No server, no kernel.
//
// A widget is a <div class="browser-translator"> (transformer_lib.book.browser_translator writes it):
// a textarea, a select.method (greedy or beam 2-8), a button.translate, and the places the results
// go (.status, .translation, .pieces, .timing, .attention). Nothing heavy loads before the first
// click; the button says how much the first click downloads. The decoding loops are those of
// transformer_lib/web.py's OnnxTranslator (and so of transformer_lib.decoding): greedy, and beam
// search with the length penalty ((5 + |Y|) / 6) ** alpha, ties to the lower index.
//
// Everything the reader types reaches the page as text (textContent), never as markup.
(function () {
  "use strict";

  const here = document.currentScript ? document.currentScript.src : "";
  const RUNTIME = new URL(".", here).href;  // _static/browser-translator/: this script, onnxruntime-web, SentencePiece
  const MODEL = new URL("../translator/", here).href;  // _static/translator/: the exported model (book_static/)

  function loadScript(url) {
    return new Promise(function (resolve, reject) {
      const script = document.createElement("script");
      script.src = url;
      script.onload = resolve;
      script.onerror = function () { reject(new Error(url.split("/").pop() + " could not be loaded")); };
      document.head.appendChild(script);
    });
  }

  async function fetchChecked(name, entry) {
    let response;
    try {
      response = await fetch(MODEL + name);
    } catch (error) {
      throw new Error(name + " could not be downloaded (" + error.message + ")");
    }
    if (!response.ok) throw new Error(name + " is missing (HTTP " + response.status + ")");
    const data = new Uint8Array(await response.arrayBuffer());
    if (entry && data.length !== entry.bytes) {
      throw new Error(name + " is damaged: " + data.length + " bytes instead of " + entry.bytes);
    }
    if (entry && window.crypto && crypto.subtle) {  // only in a secure context (HTTPS, localhost)
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", data));
      const hex = Array.from(digest, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
      if (hex !== entry.sha256) throw new Error(name + " is damaged: its checksum is not the manifest's");
    }
    return data;
  }

  function megabytes(bytes) { return (bytes / 1e6).toFixed(1) + " MB"; }

  // ---- the model: load once, then step ----

  class Model {
    static async load(manifest, status) {
      status("Loading onnxruntime-web and SentencePiece …");
      await loadScript(RUNTIME + "ort.wasm.min.js");
      await loadScript(RUNTIME + "sentencepiece.min.js");
      ort.env.wasm.wasmPaths = RUNTIME;
      ort.env.wasm.numThreads = 1;
      const model = new Model(manifest);
      const files = manifest.files;
      status("Downloading the model (" + megabytes(files["encoder.onnx"].bytes + files["decoder_step.onnx"].bytes) + ") …");
      const options = {executionProviders: ["wasm"], extra: {session: {disable_quant_qdq: "1"}}};  // int8 -> float once
      model.encoder = await ort.InferenceSession.create(await fetchChecked("encoder.onnx", files["encoder.onnx"]), options);
      model.step = await ort.InferenceSession.create(await fetchChecked("decoder_step.onnx", files["decoder_step.onnx"]), options);
      status("Loading the tokenizers …");
      model.source = new BookSentencePiece.SentencePieceProcessor();
      await model.source._loadModel(await fetchChecked("source.model", files["source.model"]));  // from bytes
      model.target = new BookSentencePiece.SentencePieceProcessor();
      await model.target._loadModel(await fetchChecked("target.model", files["target.model"]));
      const pieces = await fetchChecked("target_pieces.json", files["target_pieces.json"]);
      model.targetPieces = JSON.parse(new TextDecoder().decode(pieces));
      return model;
    }

    constructor(manifest) {
      this.manifest = manifest;
      this.ids = manifest.ids;
      this.maxLength = manifest.max_length;
      const size = manifest.model;
      this.layers = size.num_layers;
      this.heads = size.num_heads;
      this.dk = size.d_k;
      this.vocab = size.target_vocab_size;
    }

    // The source ids (START ... END) of a text, cut to max_length as the Python Translator cuts it.
    encode(text) {
      const ids = [this.ids.start].concat(this.source.encodeIds(text), [this.ids.end]);
      const cut = ids.length > this.maxLength;
      return {ids: cut ? ids.slice(0, this.maxLength - 1).concat([this.ids.end]) : ids, cut: cut, pieces: ids.length - 2};
    }

    decode(ids) {
      const never = new Set([this.ids.pad, this.ids.start, this.ids.end]);
      return this.target.decodeIds(ids.filter(function (i) { return !never.has(i); }));
    }

    async start(sourceIds) {
      const input = new ort.Tensor("int32", Int32Array.from(sourceIds), [1, sourceIds.length]);
      return this.encoder.run({source_ids: input});  // cross keys and values, source mask: batch 1
    }

    emptyCaches(rows) {
      const caches = {}, dims = [rows, this.heads, this.maxLength, this.dk];
      for (let i = 0; i < this.layers; i++) {
        for (const part of ["key", "value"]) {
          caches["self_" + part + "_" + i] = new ort.Tensor("float32", new Float32Array(rows * this.heads * this.maxLength * this.dk), dims);
        }
      }
      return caches;
    }

    // One decoder step for each row's newest token: {logits [rows * V], caches, weights [rows, layers, heads, S]}.
    async run(tokens, offset, caches, source) {
      const feeds = Object.assign({
        token: new ort.Tensor("int32", Int32Array.from(tokens), [tokens.length, 1]),
        offset: new ort.Tensor("int32", Int32Array.of(offset), []),
      }, caches, source);
      const out = await this.step.run(feeds);
      const next = {};
      for (const name of Object.keys(caches)) next[name] = out["new_" + name];
      return {logits: out.logits.data, caches: next, weights: out.cross_weights};
    }

    // Log-probabilities of one row of logits, PAD and START never generated (float32, as the Python loops).
    logProbs(logits, row) {
      const V = this.vocab, base = row * V, out = new Float32Array(V);
      let max = -Infinity, sum = 0;
      for (let v = 0; v < V; v++) if (!this.never(v) && logits[base + v] > max) max = logits[base + v];
      for (let v = 0; v < V; v++) if (!this.never(v)) sum += Math.exp(logits[base + v] - max);
      const logSum = Math.log(sum);
      for (let v = 0; v < V; v++) out[v] = this.never(v) ? -Infinity : Math.fround(logits[base + v] - max - logSum);
      return out;
    }

    never(v) { return v === this.ids.pad || v === this.ids.start; }

    weightsOf(weights, row) {  // this step's cross-attention of one row: [layers * heads * S]
      const size = weights.data.length / weights.dims[0];
      return weights.data.slice(row * size, (row + 1) * size);
    }

    async greedy(sourceIds) {
      const source = await this.start(sourceIds);
      let caches = this.emptyCaches(1), token = this.ids.start;
      const ids = [], attention = [];
      for (let t = 0; t < this.maxLength; t++) {
        const step = await this.run([token], t, caches, source);
        caches = step.caches;
        attention.push(this.weightsOf(step.weights, 0));
        let best = -1;
        for (let v = 0; v < this.vocab; v++) {  // the first largest logit, as argmax
          if (!this.never(v) && (best < 0 || step.logits[v] > step.logits[best])) best = v;
        }
        token = best;
        ids.push(token);
        if (token === this.ids.end) break;
      }
      return {ids: ids, attention: attention};
    }

    async beam(sourceIds, k, alpha) {
      const V = this.vocab, source = await this.start(sourceIds);
      let caches = this.emptyCaches(k);
      let tokens = Array.from({length: k}, () => [this.ids.start]);
      let scores = Float32Array.from({length: k}, (_, b) => (b === 0 ? 0 : -Infinity));  // one hypothesis alive
      let finished = new Array(k).fill(false), lengths = new Array(k).fill(0);
      let attention = Array.from({length: k}, () => []);
      for (let t = 0; t < this.maxLength; t++) {
        const step = await this.run(tokens.map((row) => row[t]), t, caches, source);
        // the k best of k * V candidates, ties to the lower index (as tf.math.top_k)
        const best = [];  // [score, index], best first
        for (let b = 0; b < k; b++) {
          const logProbs = finished[b] ? null : this.logProbs(step.logits, b);
          for (let v = 0; v < V; v++) {
            const add = finished[b] ? (v === this.ids.pad ? 0 : -Infinity) : logProbs[v];
            const score = Math.fround(scores[b] + add);
            if (best.length === k && !(score > best[k - 1][0])) continue;
            let at = best.length;
            while (at > 0 && score > best[at - 1][0]) at--;
            best.splice(at, 0, [score, b * V + v]);
            if (best.length > k) best.pop();
          }
        }
        const beam = best.map((c) => Math.floor(c[1] / V)), next = best.map((c) => c[1] % V);
        tokens = beam.map((b, i) => tokens[b].concat([next[i]]));
        attention = beam.map((b) => attention[b].concat([this.weightsOf(step.weights, b)]));
        const cachesOut = {};
        for (const name of Object.keys(step.caches)) cachesOut[name] = gatherRows(step.caches[name], beam);
        caches = cachesOut;
        scores = Float32Array.from(best, (c) => c[0]);
        const wasFinished = beam.map((b) => finished[b]);
        lengths = beam.map((b, i) => (wasFinished[i] ? lengths[b] : t + 1));
        finished = wasFinished.map((done, i) => done || next[i] === this.ids.end);
        if (finished.every(Boolean)) break;
      }
      let chosen = 0, top = -Infinity;
      for (let b = 0; b < k; b++) {
        const normalized = Math.fround(scores[b] / Math.fround(Math.pow((5 + lengths[b]) / 6, alpha)));
        if (normalized > top) { top = normalized; chosen = b; }
      }
      const row = tokens[chosen].slice(1), end = row.indexOf(this.ids.end);
      const ids = end >= 0 ? row.slice(0, end + 1) : row;
      return {ids: ids, attention: attention[chosen].slice(0, ids.length)};
    }

    async translate(text, beamSize) {
      const source = this.encode(text);
      const result = beamSize > 1 ? await this.beam(source.ids, beamSize, this.manifest.beam_alpha)
                                  : await this.greedy(source.ids);
      return Object.assign(result, {source: source, text: this.decode(result.ids)});
    }
  }

  function gatherRows(tensor, rows) {
    const size = tensor.data.length / tensor.dims[0], out = new Float32Array(rows.length * size);
    rows.forEach(function (r, i) { out.set(tensor.data.subarray(r * size, (r + 1) * size), i * size); });
    return new ort.Tensor("float32", out, [rows.length].concat(tensor.dims.slice(1)));
  }

  // ---- what the reader typed: the same checks as transformer_lib.text_checks ----

  function textWarnings(text, script) {
    const warnings = [];
    if (/[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/.test(text)) {
      warnings.push("The text contains control characters: they are not text and may spoil the translation.");
    }
    const name = script ? script.charAt(0) + script.slice(1).toLowerCase() : null;  // CYRILLIC -> Cyrillic
    let has = true;
    try { has = !name || new RegExp("\\p{Script=" + name + "}", "u").test(text); } catch (error) { has = true; }
    if (!has) {
      warnings.push("The text has no " + name + " letter, but the translator was trained on " + name +
                    " text: it is probably not Russian, and the translation will be nonsense.");
    }
    return warnings;
  }

  // ---- the widget ----

  function Widget(root) {
    this.root = root;
    this.textarea = root.querySelector("textarea");
    this.method = root.querySelector("select.method");
    this.button = root.querySelector("button.translate");
    this.statusLine = root.querySelector(".status");
    this.output = root.querySelector(".translation");
    this.piecesLine = root.querySelector(".pieces");
    this.timing = root.querySelector(".timing");
    this.attention = root.querySelector(".attention");
    this.model = null;
    this.loading = null;
    root.browserTranslator = this;  // for the site check and the console
    const widget = this;
    this.button.addEventListener("click", function () { widget.translateTyped(); });
    fetch(MODEL + "manifest.json").then(function (r) {
      if (!r.ok) throw new Error("manifest.json is missing (HTTP " + r.status + ")");
      return r.json();
    }).then(function (manifest) {
      widget.manifest = manifest;
      return fetch(RUNTIME + "runtime.json").then(function (r) { return r.ok ? r.json() : {}; });
    }).then(function (runtime) {
      const all = Object.assign({}, runtime.files || {}, widget.manifest.files);
      let bytes = 0, packed = 0;
      Object.keys(all).forEach(function (n) { bytes += all[n].bytes; packed += all[n].gzip_bytes || all[n].bytes; });
      widget.firstUse = {bytes: bytes, gzip_bytes: packed};
      widget.button.textContent = "Translate (first use downloads " + megabytes(packed) + ")";
      widget.root.classList.add("browser-translator-ready");
    }).catch(function (error) { widget.fail(error); });
  }

  Widget.prototype.status = function (text) { this.statusLine.textContent = text; };

  Widget.prototype.fail = function (error) {
    this.root.classList.add("browser-translator-error");
    this.status("The translator could not be loaded: " + error.message + ". Reload the page to try again.");
    console.warn("browser-translator: " + error.message);
  };

  Widget.prototype.ensureModel = function () {
    const widget = this;
    if (!this.loading) {
      if (!this.manifest) return Promise.reject(new Error("its manifest did not load"));
      this.loading = Model.load(this.manifest, function (text) { widget.status(text); })
        .then(function (model) { widget.model = model; return model; });
    }
    return this.loading;
  };

  // Translate `text` (for the site check too): {sourceIds, ids, text, cut, warnings, seconds}.
  Widget.prototype.translateText = async function (text, beamSize) {
    const model = await this.ensureModel();
    const started = performance.now();
    const result = await model.translate(text, beamSize);
    result.seconds = (performance.now() - started) / 1000;
    result.warnings = textWarnings(text, this.manifest.source_script);
    return result;
  };

  Widget.prototype.translateTyped = async function () {
    const text = this.textarea.value, beamSize = parseInt(this.method.value, 10) || 1;
    this.button.disabled = true;
    this.output.textContent = "";
    this.piecesLine.textContent = "";
    this.timing.textContent = "";
    try {
      if (!text.trim()) {
        this.status("Type a Russian sentence first: there is nothing to translate.");
        return;
      }
      const result = await this.translateText(text, beamSize);
      this.button.textContent = "Translate";
      const notes = result.warnings.slice();
      if (result.source.cut) {
        notes.push("The text is " + result.source.pieces + " pieces long; the model reads at most " +
                   (this.model.maxLength - 2) + ", so only the beginning was translated.");
      }
      this.status(notes.join(" "));
      this.output.textContent = result.text;
      const model = this.model;
      const sourcePieces = model.source.encodePieces(text).slice(0, result.source.ids.length - 2);
      const targetPieces = result.ids.filter((i) => i !== model.ids.end).map((i) => model.targetPieces[i]);
      this.piecesLine.textContent = "Pieces: " + sourcePieces.join(" ") + "  →  " + targetPieces.join(" ");
      this.timing.textContent = (beamSize > 1 ? "Beam search, beam " + beamSize : "Greedy decoding") + ": " +
        Math.round(result.seconds * 1000) + " ms in this browser.";
      this.drawAttention(result, ["<s>"].concat(sourcePieces, ["</s>"]), ["<s>"].concat(targetPieces));
    } catch (error) {
      this.fail(error);
    } finally {
      this.button.disabled = false;
    }
  };

  // The cross-attention map of the chosen layer and head, drawn with Vega-Lite as the book's figures are.
  Widget.prototype.drawAttention = function (result, sourcePieces, targetPieces) {
    const widget = this, model = this.model, S = result.source.ids.length;
    this.attention.textContent = "";
    const controls = document.createElement("p");
    const selects = ["layer", "head"].map(function (name) {
      const label = document.createElement("label"), select = document.createElement("select");
      select.className = name;
      const count = name === "layer" ? model.layers : model.heads;
      for (let i = 0; i < count; i++) select.add(new Option(String(i + 1), String(i)));
      if (name === "layer") select.value = String(count - 1);
      label.append(name + " ", select, " ");
      controls.appendChild(label);
      return select;
    });
    const map = document.createElement("div");
    map.className = "attention-map";
    this.attention.append(controls, map);
    function draw() {
      const layer = parseInt(selects[0].value, 10), head = parseInt(selects[1].value, 10), values = [];
      result.attention.forEach(function (step, t) {
        for (let s = 0; s < S; s++) values.push({query: t, key: s, weight: step[(layer * model.heads + head) * S + s]});
      });
      const spec = {
        title: "cross-attention, layer " + (layer + 1) + ", head " + (head + 1),
        data: {values: values},
        params: [{name: "source", value: sourcePieces}, {name: "target", value: targetPieces}],
        mark: "rect",
        encoding: {
          x: {field: "key", type: "ordinal", title: "source piece (key)", axis: {labelExpr: "source[datum.value]", labelAngle: -60}},
          y: {field: "query", type: "ordinal", title: "target piece (query)", axis: {labelExpr: "target[datum.value]"}},
          color: {field: "weight", type: "quantitative", scale: {scheme: "magma", domain: [0, 1]}, title: "weight"},
          tooltip: [{field: "weight", type: "quantitative", format: ".3f"}],
        },
        width: {step: 22}, height: {step: 22},
      };
      if (typeof vegaEmbed !== "function") {
        map.textContent = "(The map needs the book's figure scripts, which this page did not load.)";
        return;
      }
      vegaEmbed(map, spec, {mode: "vega-lite", renderer: "svg", actions: false})
        .then(function () { widget.root.classList.add("browser-translator-drawn"); })
        .catch(function (error) { map.textContent = "The map could not be drawn: " + error; });
    }
    selects.forEach(function (select) { select.addEventListener("change", draw); });
    draw();
  };

  function start() {
    document.querySelectorAll("div.browser-translator").forEach(function (root) { new Widget(root); });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
