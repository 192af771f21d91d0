#!/usr/bin/env python3
"""Read the bars off a horizontal grouped bar chart (PNG), such as LMSYS's per-layer time breakdowns.

  scripts/digitize-bar-chart.py CHART.png --tick STEP --categories "A,B,..." --series "name=R,G,B" ...

The x axis is found from the chart's vertical grid lines (evenly spaced, STEP apart, the first at
STEP) and the bars' common left edge (zero). Bars of each series colour are grouped by category,
top to bottom, in the order --categories gives; a category may lack a series. Each bar's value is
its rightmost pixel of the series colour (the error bars are grey) converted with the grid's scale.
Prints category,series,value and, first, the scale (one pixel of the x axis).

The LMSYS 2025-05-05 large-scale EP blog's charts (lm-sys/lm-sys.github.io,
public/images/blog/large_scale_ep/; read here from ch-wan/lm-sys.github.io@01f4540):

  profile-decode.png --tick 0.2 --categories "Overall,Dispatch,Combine,MoE,Attention Core,GEMM,Other Kernels,Launch Overhead"
  profile-prefill.png --tick 10 --categories "Overall,Dispatch Barrier,Dispatch Core,Combine Barrier,Combine Core,MoE,Attention Core,GEMM,Other Kernels,Comp Stream Bubble,Comm Stream Bubble"

with --series "unit test=226,60,48" "DeepSeek=55,158,76" "SGLang=247,180,32" "SGLang+=64,122,240"
(SGLang+: simulated perfect EPLB in prefill, simulated slow attention in decode), and

  tbo-breakdown-prefill.png --tick 10 with the prefill categories and
  --series "TBO16k=55,158,76" "TBO8k=247,180,32" "noTBO8k=64,122,240" (its bars of a category touch).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_chart import near, read_png, runs  # noqa: E402


def runs_of(xs):
    """(start, end) of each run of consecutive values in the ascending list xs."""
    out = []
    for x in xs:
        if out and x == out[-1][1] + 1:
            out[-1] = (out[-1][0], x)
        else:
            out.append((x, x))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("chart")
    ap.add_argument("--tick", type=float, required=True, help="value between vertical grid lines")
    ap.add_argument("--categories", required=True, help="comma-separated, top to bottom")
    ap.add_argument("--series", nargs="+", required=True, help="name=R,G,B in legend order")
    ap.add_argument("--grid", default="234,234,234", help="grid line colour R,G,B")
    a = ap.parse_args()
    w, h, px = read_png(a.chart)
    grid = tuple(int(v) for v in a.grid.split(","))
    series = []
    for s in a.series:
        name, rgb = s.split("=")
        series.append((name, tuple(int(v) for v in rgb.split(","))))
    categories = a.categories.split(",")

    # Bars: per series, runs of rows holding the colour; each bar's extent from its rows.
    bars = []  # (top, bottom, left, right, series)
    for name, colour in series:
        # Per row, the runs of the colour; a bar is the run that starts at its left edge, joined
        # across the gaps an error bar's whisker and caps cut (a few pixels), so a legend marker
        # or label of the same colour further along the bar's rows is not taken for its end.
        rows = [[x for x in range(w) if near(px[y][x], colour, 12)] for y in range(h)]
        spans = runs([len(r) > 0 for r in rows])
        # An error bar's line can cover a short bar's middle row: join runs one or two rows apart.
        joined = []
        for span in spans:
            if joined and span[0] - joined[-1][1] <= 3:
                joined[-1] = (joined[-1][0], span[1])
            else:
                joined.append(span)
        for top, bottom in joined:
            filled = [y for y in range(top, bottom + 1) if rows[y]]
            left = min(min(rows[y]) for y in filled)
            right = 0
            for y in filled:
                end = None
                for s, e in runs_of(rows[y]):
                    if end is None and s <= left + 2:
                        end = e  # the run from the bar's left edge
                    elif end is not None and s - end <= 5:
                        end = e  # past a whisker or cap
                if end is not None:
                    right = max(right, end)
            bars.append((top, bottom, left, right, name))
    if not bars:
        sys.exit(f"{a.chart}: no bars of the given colours")
    # Bars start at zero, the leftmost edge; the legend's markers start further right.
    zero = min(b[2] for b in bars)
    bars = [b for b in bars if b[2] <= zero + 2]
    # Grid lines: columns right of zero that are the grid colour over a fifth of the plot height.
    top = min(b[0] for b in bars)
    bottom = max(b[1] for b in bars)
    cols = [sum(near(px[y][x], grid, 6) for y in range(top, bottom + 1)) > (bottom - top) / 5 for x in range(w)]
    lines = [(s + e) / 2 for s, e in runs(cols) if s > zero + 2]
    if len(lines) < 2:
        sys.exit(f"{a.chart}: found {len(lines)} grid lines right of the axis, expected at least 2")
    gaps = [b - a_ for a_, b in zip(lines, lines[1:])]
    if max(gaps) - min(gaps) > 2:
        sys.exit(f"{a.chart}: grid lines at {lines} are not evenly spaced")
    per_tick = (lines[-1] - lines[0]) / (len(lines) - 1)
    # Zero from the grid (the axis hides the line at 0): the first line is one tick right of it.
    zero_from_grid = lines[0] - per_tick
    if abs(zero_from_grid - zero) > 2:
        sys.exit(f"{a.chart}: bars start at x={zero}, the grid puts zero at {zero_from_grid:.1f}")
    scale = a.tick / per_tick
    print(f"# {len(lines)} grid lines, {per_tick:.2f} px per {a.tick}; one pixel = {scale:.4f}")

    # Group bars into categories by the gaps between them.
    bars.sort()
    groups, cur = [], [bars[0]]
    for b in bars[1:]:
        if b[0] - cur[-1][1] > (cur[-1][1] - cur[-1][0]) / 2:  # a gap wider than half a bar (a group's bars touch)
            groups.append(cur)
            cur = []
        cur.append(b)
    groups.append(cur)
    if len(groups) != len(categories):
        sys.exit(f"{a.chart}: {len(groups)} groups of bars, {len(categories)} categories given")
    print("category,series,value")
    for cat, g in zip(categories, groups):
        for b in g:
            # The right edge is anti-aliased: the bar ends in the middle of its last pixel of the colour.
            print(f"{cat},{b[4]},{(b[3] + 0.5 - zero_from_grid) * scale:.4f}")


if __name__ == "__main__":
    main()
