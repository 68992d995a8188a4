"""mara-bench evaluation harness: datasets, agent systems, tools, retrieval and the `local/` model provider."""
