"""The captioned PNG plots that asset metadata embeds (metadata.py)."""

import base64

import pytest

from surrogate_dagster.metadata import bar_plot, funnel_plot, histogram_plot, png_markdown


def _png(md: str) -> bytes:
    return base64.b64decode(md.split("(data:image/png;base64,", 1)[1].rstrip(")"))


@pytest.mark.parametrize("md, caption", [
    (funnel_plot({"mirrored": 10, "normalized": 9, "curated": 4}, "Rows per curation step: s"),
     "Rows per curation step: s"),
    (bar_plot({"a": 0.9, "b": 0.1}, "Shares", xlabel="share", limit=0.8, percent=True), "Shares"),
    (histogram_plot({"1": 3, "4": 2}, "Edu scores", xlabel="score", threshold=3), "Edu scores"),
])
def test_each_plot_is_a_png_named_by_its_caption(md, caption):
    assert md.startswith(f"**{caption}**\n\n![{caption}](data:image/png;base64,")
    assert _png(md).startswith(b"\x89PNG\r\n\x1a\n")


def test_nothing_to_plot_gives_no_plot():
    assert funnel_plot({}, "x") is None and bar_plot({}, "x") is None and histogram_plot({}, "x", "y") is None


def test_uncaptioned_images_keep_their_plain_form():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots()
    assert png_markdown(fig).startswith("![plot](data:image/png;base64,")
    plt.close(fig)
