"""bench/plot.py reads the tables of the results files, draws each plot of its specs, and the
committed docs/img/*.svg are what it draws from the committed results."""

import importlib.util
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

pytest.importorskip("matplotlib")

ROOT = pathlib.Path(__file__).resolve().parents[2]
IMG = ROOT / "docs" / "img"
SVG = "{http://www.w3.org/2000/svg}"
DC = "{http://purl.org/dc/elements/1.1/}"

_module_spec = importlib.util.spec_from_file_location("plot", ROOT / "bench" / "plot.py")
assert _module_spec is not None and _module_spec.loader is not None
plot = importlib.util.module_from_spec(_module_spec)
sys.modules["plot"] = plot  # dataclasses look their module up by name
_module_spec.loader.exec_module(plot)

RESULTS = """# A benchmark

- Date: 2026-01-02
- Machine: a test machine (4 cores,
  8 GiB)
- Command: `none`

```
what        | kjit     | ratio (>1: kjit faster)
------------+----------+------------------------
exp, fresh  | 7.15 ms  | 2.04x
exp, out=   | 4.16 ms  | 2.14x
```

## Second part

| row | before | after |
|---|---|---|
| a | 10.70 ms (2.33× NumPy) | **10.33 ms** (2.46×) |
| b | 1.28, 1.39 µs | 0.5 / 0.7 µs |

Between the tables.

| row | before | after |
|---|---|---|
| a | 1 | 2 |
"""


def _spec(**changes: object) -> "plot.PlotSpec":
    fields: dict = dict(name="t", title="a title", results="t.md", section="Second part",
                        table=0, label_column="row",
                        series=(plot.Series("before", "Before"), plot.Series("after", "After")),
                        rows=(("b", "row b"), ("a", "row a")), axis="µs")
    fields.update(changes)
    return plot.PlotSpec(**fields)


@pytest.fixture
def results(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "t.md").write_text(RESULTS, encoding="utf-8")
    return tmp_path


def test_a_markdown_table_reads_as_the_first_number_of_each_cell(results):
    data = plot.read(_spec(reference=plot.Reference("ref", row="a")), results)
    assert data.labels == ["row b", "row a"]
    assert data.values == {"Before": ["1.28", "10.70"], "After": ["0.5", "10.33"]}
    assert data.reference == "10.70"
    assert data.caption == ("a test machine (4 cores, 8 GiB). 2026-01-02. "
                            'From bench/results/t.md, "Second part".')


def test_a_section_s_second_table_and_a_text_block_s_table(results):
    assert plot.read(_spec(table=1, rows=(("a", "a"),)), results).values == {
        "Before": ["1"], "After": ["2"]}
    data = plot.read(_spec(section=None, label_column="what",
                           series=(plot.Series("ratio (>1: kjit faster)", "speed"),),
                           rows=(("exp, out=", "out"), ("exp, fresh", "fresh"))), results)
    assert data.values == {"speed": ["2.14", "2.04"]}
    assert data.caption.endswith("From bench/results/t.md, header.")


@pytest.mark.parametrize("changes, message", [
    (dict(section="Third part"), "no section '## Third part'"),
    (dict(table=2), "has 2 tables, not a table 2"),
    (dict(rows=(("c", "c"),)), "no number for row 'c' in column 'before'"),
    (dict(series=(plot.Series("during", "During"),)), "in column 'during'"),
])
def test_what_a_spec_names_must_be_there(results, changes, message):
    with pytest.raises(ValueError, match="plot t: bench/results/t.md") as error:
        plot.read(_spec(**changes), results)
    assert message in str(error.value)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("plots")
    subprocess.run([sys.executable, str(ROOT / "bench" / "plot.py"), "--out", str(out)],
                   check=True, capture_output=True)
    return out


def _drawn_text(svg: ElementTree.ElementTree) -> list[str]:
    """The text the picture shows (not its metadata)."""
    return ["".join(node.itertext()) for node in svg.getroot().iter(f"{SVG}text")]


def _description(svg: pathlib.Path) -> str:
    node = ElementTree.parse(svg).getroot().find(f".//{DC}description")
    assert node is not None and node.text is not None, f"{svg} records no description"
    return node.text


def _creator(svg: pathlib.Path) -> str:
    """What drew the file: "Matplotlib v3.x.y, https://matplotlib.org/"."""
    node = ElementTree.parse(svg).getroot().find(f".//{DC}creator")
    assert node is not None, f"{svg} records no creator"
    return "".join(node.itertext()).strip()


@pytest.mark.parametrize("spec", plot.PLOTS, ids=lambda spec: spec.name)
def test_each_plot_shows_its_series_rows_and_numbers(drawn, spec):
    svg = ElementTree.parse(drawn / f"{spec.name}.svg")
    text = _drawn_text(svg)
    data = plot.read(spec)
    for series in spec.series:
        assert series.name in text
    for label in data.labels:
        assert label in text
    for values in data.values.values():
        for value in values:
            assert value in text
    if spec.reference is not None:
        assert f"{spec.reference.name} ({data.reference})" in text
    assert spec.title in text
    assert "".join(text).count(spec.results) == 1  # the caption names its source


def test_the_gpu_plot_reads_run_ad_s_table():
    # Numbers copied by hand from bench/results/gpu.md, run AD's table.
    data = plot.read(next(spec for spec in plot.PLOTS if spec.name == "gpu_calls"))
    shown = dict(zip(data.labels, data.values["µs per call (run AD)"]))
    assert shown["kjit bound call, outputs given"] == "3.41"
    assert shown["kjit keyword call, new output"] == "4.67"
    assert shown["Triton, preallocated"] == "10.95"
    assert data.reference == "3.06"
    assert "nvidia-h200 device machine" in data.caption


@pytest.mark.parametrize("spec", plot.PLOTS, ids=lambda spec: spec.name)
def test_the_committed_plot_is_current(drawn, spec):
    committed, fresh = IMG / f"{spec.name}.svg", drawn / f"{spec.name}.svg"
    assert committed.exists(), f"{committed} is missing: run make plots"
    assert _description(committed) == _description(fresh), (
        f"{committed} shows other numbers than bench/results/{spec.results}: run make plots")
    # Byte for byte where the same matplotlib draws it (another version may lay text out
    # differently with the same numbers).
    if _creator(committed) == _creator(fresh):
        assert committed.read_bytes() == fresh.read_bytes(), (
            f"{committed} is not what bench/plot.py draws: run make plots")


def test_docs_img_holds_only_the_plots():
    assert sorted(p.name for p in IMG.iterdir()) == sorted(f"{s.name}.svg" for s in plot.PLOTS)
