// The entry point esbuild bundles into _assets/browser-translator/sentencepiece.min.js (`make book`):
// SentencePiece compiled to WebAssembly (@sctg/sentencepiece-js), as the global BookSentencePiece.
export { SentencePieceProcessor } from "@sctg/sentencepiece-js";
