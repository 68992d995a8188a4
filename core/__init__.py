"""The ground floor every other part of mara-bench stands on: the typed-config machinery (``typed_config``), name
registries (``named``), every private Inspect name (``inspect_compat``), the conversation, tool and episode types
that systems, harness and trainer share (``episodes``) and the trainer's training row (``samples``). It imports
nothing of mara-bench (``tests/core/test_layers.py``)."""
