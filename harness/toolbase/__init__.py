"""What the tools and the tool cache share, below both: the tool settings (``settings``: every option a toolbox
takes, typed, and ``ToolConfigError``), the leak blocklist they default to (``blocklist``) and the text a tool
returns (``output``: ``ToolText`` and its documents). The tools (``mara_bench.harness.tools``) build on it, and so
does the cache that records their answers (``mara_bench.harness.toolcache``).
"""
