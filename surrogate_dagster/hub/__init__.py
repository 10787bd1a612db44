"""HF Hub access: streaming reads with a revision pin and cap, and private pushes.

`OfflineHub` reads a local mirror laid out like the Hub (the local profile and the tests);
`OnlineHub` uses `datasets` streaming and `HfApi`. Both have the same methods.
"""

from .client import HubClient, OfflineHub, OnlineHub, RevisionNotFound, make_hub

__all__ = ["HubClient", "OfflineHub", "OnlineHub", "RevisionNotFound", "make_hub"]
