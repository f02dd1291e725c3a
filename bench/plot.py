"""The plots of docs/img/, drawn from the tables of bench/results/*.md.

Each plot is one entry of PLOTS: the results file, the section (by its heading) and the table
in it (by its place among the section's tables) it reads, the column naming its rows, the
columns that are its series and the rows it shows. A cell such as `10.33 ms (2.46x)` reads as
its first number. The caption gives the machine and date of the results file's header.

The SVG files are the same bytes each time for the same results and the same matplotlib (no
date, fixed ids); each records the numbers it shows in its metadata (`dc:description`), so that
a test can tell a plot whose results changed from one another matplotlib drew differently.

Usage: python bench/plot.py [--out DIR]   (default docs/img; `make plots`)
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import re
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DEFAULT_OUT = ROOT / "docs" / "img"


@dataclasses.dataclass(frozen=True)
class Series:
    """One column of the table, drawn as one colour of bars."""

    column: str
    name: str


@dataclasses.dataclass(frozen=True)
class Reference:
    """A dashed line across the bars: a row's value in the first series, or a fixed value."""

    name: str
    row: str | None = None
    value: str | None = None  # as the plot writes it, e.g. "1"


@dataclasses.dataclass(frozen=True)
class PlotSpec:
    """One plot: which table it reads and what of it it shows."""

    name: str  # the file's name in docs/img, without .svg
    title: str
    results: str  # a file of bench/results
    section: str | None  # the heading's text after "## "; None for the part above the first
    table: int  # its place among the section's tables, from 0
    label_column: str  # the column whose text names each row
    series: tuple[Series, ...]
    rows: tuple[tuple[str, str], ...]  # (the label column's text, the label shown), top down
    axis: str
    reference: Reference | None = None
    log: bool = False


SPEED_RATIO = "ratio (>1: kjit faster)"

PLOTS: tuple[PlotSpec, ...] = (
    PlotSpec(
        name="gpu_calls",
        title="Time per call of a 16-element kernel on the GPU: kjit's calls and its peers",
        results="gpu.md", section="Runs AA to AD: outputs leased to the tensors that hold them",
        table=1, label_column="what", series=(Series("result", "µs per call (run AD)"),),
        rows=(("kjit bound, torch in/out, outputs", "kjit bound call, outputs given"),
              ("kjit bound, torch in/out, new output", "kjit bound call, new output"),
              ("kjit, torch in/out, outputs=", "kjit keyword call, outputs="),
              ("kjit, torch in/out, new output", "kjit keyword call, new output"),
              ("kjit C++ API, outputs=", "kjit C++ API, outputs="),
              ("kjit C++ API, new output", "kjit C++ API, new output"),
              ("+ cuMemAllocAsync/FreeAsync", "cuLaunchKernel + cuMemAllocAsync/FreeAsync"),
              ("Python floor: two torch tensors read, torch's stream",
               "Python floor: C function, two torch tensors read"),
              ("CuPy RawKernel, preallocated", "CuPy RawKernel, preallocated"),
              ("CuPy RawKernel, with allocation", "CuPy RawKernel, with allocation"),
              ("torch.exp(out=)", "torch.exp(out=)"),
              ("torch.exp (new output)", "torch.exp, new output"),
              ("Triton, preallocated", "Triton, preallocated")),
        axis="µs per call (host time, final wait included)",
        reference=Reference("driver floor: bare cuLaunchKernel loop (C++)",
                            row="bare cuLaunchKernel (C++)")),
    PlotSpec(
        name="gpu_bandwidth",
        title="myexp on 2^28 float32 (1 GiB in, 1 GiB out) on the GPU",
        results="gpu.md", section="Runs AA to AD: outputs leased to the tensors that hold them",
        table=1, label_column="what", series=(Series("result", "TB/s (run AD)"),),
        rows=(("myexp 2^28 f32: kjit", "kjit"),
              ("myexp 2^28 f32: CuPy RawKernel", "CuPy RawKernel, same body")),
        axis="TB/s, read and written",
        reference=Reference("device copy ceiling", row="device copy ceiling")),
    PlotSpec(
        name="cpu_loop_mode",
        title="Kernels without barriers (loop mode) on the CPU against NumPy",
        results="cpu.md", section=None, table=1, label_column="what",
        series=(Series(SPEED_RATIO, "kjit's speed over NumPy's"),),
        rows=(("myexp 2^24 f32, new output", "myexp 2^24 f32, new output / numpy.exp"),
              ("myexp 2^24 f32, out=", "myexp 2^24 f32, out= / numpy.exp(out=)"),
              ("invert_3x3 10^6 f32", "invert_3x3 10^6 f32 / numpy.linalg.inv"),
              ("tiny kernel per call (16 f32)", "a call on 16 f32 / numpy.exp on 16 f32")),
        axis="speed ratio (>1: kjit faster), log scale",
        reference=Reference("as fast as NumPy", value="1"), log=True),
    PlotSpec(
        name="cpu_barrier_modes",
        title="A block sum with barriers on the CPU (2^24 f32): region mode against the rest",
        results="cooperative.md", section="CPU", table=0, label_column="against",
        series=(Series(SPEED_RATIO, "region mode's speed over it"),),
        rows=(("cooperative mode", "cooperative mode (one coroutine per thread)"),
              ("PoCL 3.0", "the same kernel in OpenCL on PoCL"),
              ("loop mode, no barriers", "loop mode, written without barriers"),
              ("numpy sum(axis=1)", "numpy sum(axis=1)")),
        axis="speed ratio (>1: region mode faster), log scale",
        reference=Reference("as fast as region mode", value="1"), log=True),
)


@dataclasses.dataclass(frozen=True)
class Table:
    header: list[str]
    rows: list[list[str]]

    def cell(self, label_column: str, label: str, column: str) -> str:
        key, at = self.header.index(label_column), self.header.index(column)
        for row in self.rows:
            if row[key] == label:
                return row[at]
        raise KeyError(label)


def sections(text: str) -> dict[str | None, str]:
    """The file's text by section heading ("## ..."); None is the part above the first."""
    parts: dict[str | None, str] = {}
    heading: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            parts[heading] = "\n".join(lines)
            heading, lines = line[3:].strip(), []
        else:
            lines.append(line)
    parts[heading] = "\n".join(lines)
    return parts


def _cells(line: str) -> list[str]:
    cells = [cell.strip() for cell in line.strip().split("|")]
    if line.strip().startswith("|"):
        cells = cells[1:-1]
    return cells


def _is_rule(line: str) -> bool:
    """A table's line under its header: `|---|---|` in Markdown, `----+----` in a text block."""
    stripped = line.strip()
    return bool(stripped) and set(stripped) <= set("-+|: ") and "-" in stripped


def tables(section: str) -> list[Table]:
    """The section's tables in order: Markdown tables and the `a | b | c` tables of text blocks
    that the benchmark scripts print (a header line, a rule of dashes, then rows)."""
    lines = section.splitlines()
    found: list[Table] = []
    i = 0
    while i + 1 < len(lines):
        if "|" in lines[i] and _is_rule(lines[i + 1]):
            header = _cells(lines[i])
            rows = []
            i += 2
            while i < len(lines) and "|" in lines[i] and not _is_rule(lines[i]):
                rows.append(_cells(lines[i]))
                i += 1
            found.append(Table(header, rows))
        else:
            i += 1
    return found


NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def first_number(cell: str) -> str:
    """`10.33 ms (2.46x)` -> `10.33`: the number as written, so that the plot shows its
    digits."""
    match = NUMBER.search(cell)
    if match is None:
        raise ValueError(f"no number in {cell!r}")
    return match.group()


def header_fields(text: str) -> dict[str, str]:
    """The `- Key: value` lines of the file's header (continuation lines joined), without
    Markdown's backticks."""
    header = sections(text)[None]
    fields = {}
    for match in re.finditer(r"^- ([A-Z][\w ]*): (.*(?:\n  +\S.*)*)", header, re.M):
        fields[match.group(1)] = " ".join(match.group(2).replace("`", "").split())
    return fields


@dataclasses.dataclass(frozen=True)
class PlotData:
    """What a plot shows, read from its results file."""

    labels: list[str]
    values: dict[str, list[str]]  # the numbers as written, by series name
    reference: str | None
    caption: str

    def description(self, spec: PlotSpec) -> str:
        """The numbers shown, one line a row, as recorded in the SVG's metadata."""
        lines = [self.caption]
        for i, label in enumerate(self.labels):
            lines.append(label + ": " + ", ".join(f"{name} = {values[i]}"
                                                  for name, values in self.values.items()))
        if spec.reference is not None:
            lines.append(f"{spec.reference.name}: {self.reference}")
        return "\n".join(lines)


def read(spec: PlotSpec, results: pathlib.Path = RESULTS) -> PlotData:
    """The values of |spec|'s rows and series, from its results file; a missing section, table,
    row or column is a ValueError naming the plot and what is missing."""
    path = results / spec.results
    text = path.read_text(encoding="utf-8")
    where = f"plot {spec.name}: bench/results/{spec.results}"
    parts = sections(text)
    if spec.section not in parts:
        raise ValueError(f"{where} has no section '## {spec.section}'")
    found = tables(parts[spec.section])
    if spec.table >= len(found):
        raise ValueError(f"{where}, section {spec.section!r}, has {len(found)} tables, "
                         f"not a table {spec.table}")
    table = found[spec.table]

    def value(row: str, column: str) -> str:
        try:
            return first_number(table.cell(spec.label_column, row, column))
        except (KeyError, ValueError) as error:
            raise ValueError(f"{where}, section {spec.section!r}, table {spec.table}: no "
                             f"number for row {row!r} in column {column!r} ({error})") from None

    values = {s.name: [value(row, s.column) for row, _ in spec.rows] for s in spec.series}
    reference = None
    if spec.reference is not None:
        reference = spec.reference.value
        if spec.reference.row is not None:
            reference = value(spec.reference.row, spec.series[0].column)
    fields = header_fields(text)
    section = "header" if spec.section is None else f'"{spec.section}"'
    caption = (f"{fields.get('Machine', 'machine not stated')}. {fields.get('Date', '')}. "
               f"From bench/results/{spec.results}, {section}.")
    return PlotData([shown for _, shown in spec.rows], values, reference, caption)


def draw(spec: PlotSpec, data: PlotData, path: pathlib.Path) -> None:
    """Draws |data| as horizontal bars, one group a row, into the SVG file |path|."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    # Text stays text (searchable, no glyph paths); ids come from a fixed salt, not a random one.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "kjit-plots",
                                "font.size": 9, "axes.unicode_minus": False}):
        count, groups = len(data.labels), len(data.values)
        fig, ax = plt.subplots(figsize=(8.0, 2.2 + 0.34 * count * groups), layout="constrained")
        height = 0.8 / groups
        for k, (name, texts) in enumerate(data.values.items()):
            ys = [i + (k - (groups - 1) / 2) * height for i in range(count)]
            bars = ax.barh(ys, [float(t) for t in texts], height=height * 0.9, label=name)
            ax.bar_label(bars, labels=texts, padding=3, fontsize=8)
        if data.reference is not None and spec.reference is not None:
            ax.axvline(float(data.reference), color="black", linestyle="--", linewidth=1,
                       label=f"{spec.reference.name} ({data.reference})")
        ax.set_yticks(range(count), data.labels)
        ax.invert_yaxis()
        if spec.log:
            ax.set_xscale("log")
        ax.margins(x=0.12)
        ax.set_xlabel(spec.axis)
        fig.suptitle(spec.title, x=0.01, ha="left", fontsize=10)
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1), fontsize=8, ncols=1, frameon=False)
        fig.supxlabel(textwrap.fill(data.caption, 140), x=0.01, ha="left", fontsize=7)
        fig.savefig(path, format="svg", bbox_inches="tight",
                    metadata={"Date": None, "Title": spec.title,
                              "Description": data.description(spec)})
        plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=DEFAULT_OUT,
                        help="the directory the SVG files go to (default docs/img)")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    for spec in PLOTS:
        draw(spec, read(spec), out / f"{spec.name}.svg")
        print(out / f"{spec.name}.svg")


if __name__ == "__main__":
    main()
