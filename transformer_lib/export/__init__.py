"""A trained translator, saved for later or for other runtimes:

    saved_model      save_translator, load_translator (this library), export_saved_model (TensorFlow Serving)
    graphs           the model as the page's two ONNX graphs (the encoder; one decoding step with its cache)
    quantize         quantize_weights: int8 weights, one scale per column
    onnx_translator  OnnxTranslator: the graphs run in Python with the page's loops, checked against Keras
    web              export_web: the folder the book's page loads (graphs, tokenizers, manifest), checked

Printed in the chapters by `show_source` (the chapter in brackets): edit one, and `make listings`
refreshes the listing that shows it.

    saved_model.export_saved_model (8)
"""
