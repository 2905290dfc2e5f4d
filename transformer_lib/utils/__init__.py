"""Helpers that are not part of the Transformer: the library's tools, not the paper's boxes.

    checks               argument checks whose errors say what was wrong and what to do
    sublayers            build_unbuilt: build a layer's sub-layer once
    quiet                keep TensorFlow's start-up notices out of notebooks
    arguments            the command line's argument types (positive_int, rate, ...)
    json_records         write and read the JSON records of a run
    memory_budget        will a training or a decoding fit in this machine's memory? (an estimate, before it runs)
    machine_description  describe_machine: the hardware and software a result came from
"""
