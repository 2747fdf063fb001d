#include "sim/svg.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace topogang::sim {
namespace {

const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                         "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string HumanSeconds(double s) {
  if (s < 60) return absl::StrFormat("%.0fs", s);
  if (s < 3600) return absl::StrFormat("%.0fm", s / 60);
  if (s < 86400) return absl::StrFormat("%.0fh", s / 3600);
  return absl::StrFormat("%.0fd", s / 86400);
}

}  // namespace

std::string JctCdfSvg(const std::vector<PolicyResult>& results, const std::string& title) {
  const double w = 760, h = 460, left = 70, right = 190, top = 40, bottom = 50;
  const double pw = w - left - right, ph = h - top - bottom;
  double lo = 1e300, hi = 0;
  std::vector<std::vector<double>> jcts;
  for (const PolicyResult& r : results) {
    std::vector<double> v;
    for (const JobResult& j : r.jobs) {
      if (j.end >= 0) v.push_back(std::max(1.0, j.end - j.arrival));
    }
    std::sort(v.begin(), v.end());
    if (!v.empty()) lo = std::min(lo, v.front()), hi = std::max(hi, v.back());
    jcts.push_back(std::move(v));
  }
  if (hi <= 0) lo = 1, hi = 10;
  const double llo = std::floor(std::log10(lo)), lhi = std::ceil(std::log10(hi));
  auto x = [&](double s) { return left + pw * (std::log10(s) - llo) / std::max(1e-9, lhi - llo); };
  auto y = [&](double f) { return top + ph * (1 - f); };
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n<text x=\"%.0f\" y=\"24\" font-size=\"15\">%s</text>\n",
      w, h, left, Escape(title));
  for (double e = llo; e <= lhi; ++e) {
    const double xv = x(std::pow(10, e));
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                          xv, top, xv, top + ph, xv, top + ph + 16, HumanSeconds(std::pow(10, e)));
  }
  for (int i = 0; i <= 4; ++i) {
    const double f = i / 4.0;
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.2f</text>\n",
                          left, y(f), left + pw, y(f), left - 6, y(f) + 4, f);
  }
  absl::StrAppendFormat(&out,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">job completion time "
                        "(arrival to end, log scale)</text>\n"
                        "<text x=\"16\" y=\"%.1f\" transform=\"rotate(-90 16 %.1f)\" "
                        "text-anchor=\"middle\">share of jobs</text>\n",
                        left + pw / 2, h - 12, top + ph / 2, top + ph / 2);
  for (size_t p = 0; p < results.size(); ++p) {
    const auto& v = jcts[p];
    const char* color = kColors[p % 8];
    std::string pts;
    // At most ~600 points per curve: every k-th job plus the last.
    const size_t step = std::max<size_t>(1, v.size() / 600);
    for (size_t i = 0; i < v.size(); i += step) {
      absl::StrAppendFormat(&pts, "%.1f,%.1f ", x(v[i]), y(static_cast<double>(i + 1) / v.size()));
    }
    if (!v.empty()) absl::StrAppendFormat(&pts, "%.1f,%.1f", x(v.back()), y(1));
    absl::StrAppendFormat(&out,
                          "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" "
                          "points=\"%s\"/>\n",
                          color, pts);
    const double ly = top + 10 + 20 * p;
    absl::StrAppendFormat(&out,
                          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                          "stroke-width=\"3\"/><text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                          left + pw + 14, ly, left + pw + 34, ly, color, left + pw + 40, ly + 4,
                          Escape(results[p].policy));
  }
  out += "</svg>\n";
  return out;
}

std::string OccupancySvg(const std::vector<PolicyResult>& results, const std::string& title) {
  size_t leaves = 0;
  for (const auto& r : results) leaves = std::max(leaves, r.snapshot_used_fraction.size());
  const int cols = std::max(1, static_cast<int>(std::ceil(std::sqrt(leaves * 1.25))));
  const int rows = std::max(1, static_cast<int>((leaves + cols - 1) / cols));
  const double cell = std::clamp(240.0 / cols, 4.0, 24.0);
  const double panel_w = cols * cell + 30, panel_h = rows * cell + 50;
  const int per_row = 3;
  const int prow = static_cast<int>((results.size() + per_row - 1) / per_row);
  const double w = std::max(420.0, per_row * panel_w + 20), h = 70 + prow * panel_h + 30;
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
      "fill=\"white\"/>\n<text x=\"20\" y=\"24\" font-size=\"15\">%s</text>\n"
      "<text x=\"20\" y=\"44\">each cell is one leaf; shade = share of its GPUs in use "
      "(white idle, black full; red outline: partly used)</text>\n",
      w, h, Escape(title));
  for (size_t p = 0; p < results.size(); ++p) {
    const PolicyResult& r = results[p];
    const double ox = 20 + (p % per_row) * panel_w, oy = 60 + (p / per_row) * panel_h;
    double used = 0;
    for (double f : r.snapshot_used_fraction) used += f;
    absl::StrAppendFormat(
        &out, "<text x=\"%.1f\" y=\"%.1f\">%s @ %s (%.0f%% used)</text>\n", ox, oy + 12,
        Escape(r.policy), HumanSeconds(r.snapshot_time),
        r.snapshot_used_fraction.empty() ? 0.0 : 100 * used / r.snapshot_used_fraction.size());
    for (size_t i = 0; i < r.snapshot_used_fraction.size(); ++i) {
      const double f = std::clamp(r.snapshot_used_fraction[i], 0.0, 1.0);
      const int shade = static_cast<int>(std::lround(255 * (1 - f)));
      const double cx = ox + (i % cols) * cell, cy = oy + 20 + (i / cols) * cell;
      absl::StrAppendFormat(&out,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                            "fill=\"rgb(%d,%d,%d)\" stroke=\"%s\" stroke-width=\"0.5\"/>\n",
                            cx, cy, cell - 1, cell - 1, shade, shade, shade,
                            (f > 0.02 && f < 0.98) ? "#c33" : "#999");
    }
  }
  out += "</svg>\n";
  return out;
}

}  // namespace topogang::sim
