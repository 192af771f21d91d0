#!/usr/bin/env python3
"""Read the points off LMSYS's "Effects of Scale and EPLB to Balancedness" chart.

The chart (lm-sys/lm-sys.github.io, blog/2025-05-05-large-scale-ep.md, image
public/images/blog/large_scale_ep/eplb-balancedness.png; the copy read here is
ch-wan/lm-sys.github.io@01f4540) is SGLang's simulation of GPU balancedness, mean over maximum
tokens per GPU for one MoE layer of DeepSeek-V3, against the number of GPUs, with and without
EPLB. This script finds the axes' grid lines and the centre of every marker, and prints each
point's GPU count (the x axis is logarithmic), balancedness and the imbalance mlaplan uses
(maximum over mean, 1 / balancedness), with the reading's resolution (one pixel of the y axis).

Usage: scripts/digitize-eplb-balancedness.py eplb-balancedness.png
(fetch the image with: git show 01f4540:public/images/blog/large_scale_ep/eplb-balancedness.png)
Pure Python (scripts/png_chart.py): the project has no imaging package.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_chart import near, read_png, runs  # noqa: E402


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    w, h, px = read_png(sys.argv[1])
    grey = (204, 204, 204)
    # Grid lines: rows and columns that are grey over a third of the image.
    hlines = [c for c in runs([sum(near(p, grey, 12) for p in row) > w / 3 for row in px])]
    vlines = [c for c in runs([sum(near(px[y][x], grey, 12) for y in range(h)) > h / 3 for x in range(w)])]
    ys = [(a + b) / 2 for a, b in hlines]
    xs = [(a + b) / 2 for a, b in vlines]
    if len(ys) != 4 or len(xs) != 5:
        sys.exit(f"expected 4 horizontal and 5 vertical grid lines, found {len(ys)} and {len(xs)}")
    y_of = dict(zip([1.0, 0.8, 0.6, 0.4], ys))  # top to bottom
    x_of = dict(zip([8, 10, 20, 40, 60], xs))   # the left axis is 8 GPUs
    # The scale from the 1.0 and 0.6 lines: every point lies between them but one (0.48), and the
    # bottom line is the axis, drawn heavier.
    per_unit_y = (y_of[0.6] - y_of[1.0]) / 0.4
    per_ln_x = (x_of[60] - x_of[10]) / math.log(6)
    # Markers: in each column, runs of the series colour taller than half a marker (lines are thin).
    series = {"with EPLB": (66, 133, 244), "without EPLB": (234, 67, 53)}
    print(f"# grid: y 1.0/0.8/0.6/0.4 at {', '.join(f'{v:.1f}' for v in ys)} px; "
          f"x 8/10/20/40/60 at {', '.join(f'{v:.1f}' for v in xs)} px")
    print(f"# resolution: one pixel is {1 / per_unit_y:.4f} of balancedness")
    print("series,gpus,balancedness,imbalance")
    plot_top, plot_bottom = int(y_of[1.0]) - 40, int(y_of[0.4]) + 40
    for name, colour in series.items():
        tall = []
        for x in range(w):
            for a, b in runs([near(px[y][x], colour) for y in range(plot_top, plot_bottom)]):
                if b - a >= 20:
                    tall.append((x, plot_top + (a + b) / 2))
        # Group adjacent columns into markers; a marker's centre is the mean of its columns' centres.
        groups, cur = [], []
        for x, y in tall:
            if cur and x - cur[-1][0] > 2:
                groups.append(cur)
                cur = []
            cur.append((x, y))
        if cur:
            groups.append(cur)
        for g in groups:
            gx = (g[0][0] + g[-1][0]) / 2
            gy = sum(y for _, y in g) / len(g)
            gpus = 10 * math.exp((gx - x_of[10]) / per_ln_x)
            bal = 1.0 - (gy - y_of[1.0]) / per_unit_y
            print(f"{name},{gpus:.1f},{bal:.4f},{1 / bal:.4f}")


if __name__ == "__main__":
    main()
