#pragma once
// TsnePlot: a t-SNE map of one training query and the labels around it, as the engine snapshots it
// during training: the query, its positives, and the negatives it met — in-batch, random, ANN-hard ones
// its batch gave it, and ANN-hard ones its batch missed. Each group has its own colour (Okabe–Ito,
// colour-blind safe) and marker shape; the query is a large star drawn on top. Hovering a point shows
// its text; the subtitle names the query and the epoch.
//
// Snapshot JSON (the engine's format):
//   {"query": 123, "query_text": "...", "epoch": 3.0, "step": 456,
//    "points": [{"x": 1.2, "y": -0.3, "group": "query", "label": -1, "text": "..."}, ...]}
// groups: "query", "positive", "in_batch", "random", "ann_hard", "missed_hard" (others are drawn as "other").
#include <QString>
#include <cstdint>
#include <string>
#include <vector>

#include "widgets/plots/plot_export.h"

namespace xmc::gui {

class TsnePlot : public QCustomPlot {
  Q_OBJECT
 public:
  explicit TsnePlot(QWidget* parent = nullptr);

  /// Shows a snapshot. On malformed JSON or a missing/ill-typed field (points[i].x/y must be finite
  /// numbers, group a string) returns false, keeps what was shown and, when `error` is given, says why.
  bool set_snapshot(const std::string& json, QString* error = nullptr);
  /// Removes the snapshot.
  void clear();
  /// What the plot says while it has no snapshot (a run that takes none says why).
  void set_empty_note(const QString& text);
  QString empty_note() const;

  /// Number of groups with at least one point.
  int group_count() const;
  /// Number of points shown.
  int point_count() const;
  /// Text of the point nearest to plot coordinates (x, y) ("" when there are no points). Distances are
  /// measured on screen once the plot is laid out, in plot units before.
  QString text_at(double x, double y) const;

  /// The curve of a group key ("query", "positive", ...), nullptr for an unknown key.
  QCPGraph* group_graph(const QString& group) const;
  /// Legend name of a group key: "query", "positives", "in-batch negatives", "random negatives",
  /// "hard negatives in batch", "hard negatives missed by the batch"; "other" for unknown keys.
  static QString group_title(const QString& group);

  QSize minimumSizeHint() const override;
  QSize sizeHint() const override;

 private:
  struct Point {
    double x = 0, y = 0;
    int group = 0;              // index into the group table
    std::int64_t label = -1;    // label id; -1 for the query
    QString text;
  };

  int nearest_point(double x, double y, double max_px) const;  // -1 when none (max_px < 0: no limit)
  void show_tooltip(QMouseEvent* event);
  void update_subtitle();
  void rebuild();
  void place_legend();  // beside the map when the plot is wide, under it when narrow

  std::vector<Point> points_;
  std::vector<QCPGraph*> graphs_;  // one per group table entry
  QString subtitle_text_;
  QCPTextElement* subtitle_ = nullptr;
  QCPLayoutGrid* side_ = nullptr;    // [legend; spacer] right of the map
  QCPLayoutGrid* bottom_ = nullptr;  // [spacer | legend | spacer] under the map
  QCPItemText* empty_note_ = nullptr;
};

}  // namespace xmc::gui
