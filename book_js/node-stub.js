// What the bundle gets for the Node modules @sctg/sentencepiece-js imports but uses only under Node
// (fs, module): nothing. esbuild aliases them here (`make book`).
export default {};
