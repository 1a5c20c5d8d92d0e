#include "widgets/plots/tsne_plot.h"

#include <QToolTip>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <nlohmann/json.hpp>

#include "widgets/plots/plot_style.h"


namespace xmc::gui {
namespace {

namespace style = plot_style;

constexpr double kHoverRadiusPx = 8;
constexpr int kSideLegendMinWidth = 640;  // narrower plots get the legend under the map
constexpr int kTooltipTextChars = 300;

// One entry per group, in drawing order (bottom to top): the many random negatives first, the query last.
struct GroupStyle {
  const char* key;
  const char* title;
  QRgb colour;
  QCPScatterStyle::ScatterShape shape;
  double size;
  bool filled;
  int legend_rank;  // position in the legend
};

// Okabe–Ito palette; shapes differ too, so the groups stay apart in grey-scale prints.
constexpr GroupStyle kGroups[] = {
    {"random", QT_TR_NOOP("random negatives"), 0xFF999999, QCPScatterStyle::ssDisc, 5, true, 3},
    {"in_batch", QT_TR_NOOP("in-batch negatives"), 0xFF0072B2, QCPScatterStyle::ssCircle, 7, false, 2},
    {"ann_hard", QT_TR_NOOP("hard negatives in batch"), 0xFFE69F00, QCPScatterStyle::ssTriangle, 9, true, 4},
    {"missed_hard", QT_TR_NOOP("hard negatives missed by the batch"), 0xFFD55E00,
     QCPScatterStyle::ssTriangleInverted, 9, false, 5},
    {"positive", QT_TR_NOOP("positives"), 0xFF009E73, QCPScatterStyle::ssDisc, 9, true, 1},
    {"other", QT_TR_NOOP("other"), 0xFF56B4E9, QCPScatterStyle::ssSquare, 6, true, 6},
    {"query", QT_TR_NOOP("query"), 0xFF000000, QCPScatterStyle::ssCustom, 22, true, 0},
};
constexpr int kGroupCount = static_cast<int>(std::size(kGroups));

int group_index(const QString& key) {
  for (int i = 0; i < kGroupCount; ++i)
    if (key == QLatin1String(kGroups[i].key)) return i;
  return -1;
}

int other_group() { return group_index(QStringLiteral("other")); }

// Five-pointed star within ±3 units (QCPScatterStyle scales custom paths by size / 6).
QPainterPath star_path() {
  QPainterPath path;
  for (int i = 0; i < 10; ++i) {
    const double r = i % 2 == 0 ? 3.0 : 1.25;
    const double a = -std::numbers::pi / 2 + i * std::numbers::pi / 5;
    const QPointF p(r * std::cos(a), r * std::sin(a));
    if (i == 0)
      path.moveTo(p);
    else
      path.lineTo(p);
  }
  path.closeSubpath();
  return path;
}

QCPScatterStyle scatter_style(const GroupStyle& g) {
  const QColor colour = QColor::fromRgba(g.colour);
  if (g.shape == QCPScatterStyle::ssCustom)
    return QCPScatterStyle(star_path(), QPen(Qt::white, 0.3), QBrush(colour), g.size);
  if (g.filled) {
    QColor fill = colour;
    if (g.size <= 5) fill.setAlpha(170);  // many small background points
    return QCPScatterStyle(g.shape, QPen(g.size <= 5 ? fill : colour.darker(130), g.size <= 5 ? 0 : 1), QBrush(fill), g.size);
  }
  return QCPScatterStyle(g.shape, QPen(colour, 1.8), QBrush(Qt::white), g.size);
}

}  // namespace

TsnePlot::TsnePlot(QWidget* parent) : QCustomPlot(parent) {
  style::style_plot(this, tr("t-SNE of the negatives a query sees"));
  empty_note_ = style::add_empty_note(this, tr("no t-SNE snapshot yet: runs take one at evaluations (tsne.every)"));
  QCPAxisRect* rect = axisRect();  // axisRect() finds only laid-out rects: keep the pointer
  subtitle_ = style::make_subtitle(this);

  style::style_axis(xAxis, tr("t-SNE dimension 1"));
  style::style_axis(yAxis, tr("t-SNE dimension 2"));
  for (QCPAxis* a : {xAxis, yAxis, xAxis2, yAxis2}) {  // t-SNE coordinates mean nothing beyond nearness
    a->setVisible(true);
    a->setTicks(false);
    a->setSubTicks(false);
    a->setTickLabels(false);
  }
  xAxis2->grid()->setVisible(false);
  yAxis2->grid()->setVisible(false);

  // title / subtitle / [map | side legend] / bottom legend
  QCPLayoutGrid* layout = plotLayout();
  layout->take(rect);
  layout->simplify();
  layout->addElement(0, 0, style::make_title(this, tr("t-SNE of the negatives a query sees")));
  layout->addElement(1, 0, subtitle_);
  auto* body = new QCPLayoutGrid;
  layout->addElement(2, 0, body);
  bottom_ = style::add_centred_row(this, 3, nullptr);
  layout->setRowStretchFactor(0, 0.001);
  layout->setRowStretchFactor(1, 0.001);
  layout->setRowSpacing(0);
  body->addElement(0, 0, rect);
  side_ = new QCPLayoutGrid;
  body->addElement(0, 1, side_);
  body->setColumnStretchFactor(1, 0.001);
  body->setColumnSpacing(0);
  side_->addElement(1, 0, new QCPLayoutElement(this));  // pushes the legend to the top
  side_->setRowSpacing(0);
  rect->insetLayout()->take(legend);
  side_->addElement(0, 0, legend);
  side_->setRowStretchFactor(0, 0.001);
  style::style_legend(legend);
  legend->setFillOrder(QCPLegend::foRowsFirst);
  legend->setMargins(QMargins(4, 10, 10, 4));
  legend->setIconSize(24, 16);
  connect(this, &QCustomPlot::beforeReplot, this, [this] {  // both depend on the width
    place_legend();
    update_subtitle();
  });

  setAutoAddPlottableToLegend(false);
  for (const GroupStyle& g : kGroups) {
    QCPGraph* graph = addGraph();
    graph->setLineStyle(QCPGraph::lsNone);
    graph->setScatterStyle(scatter_style(g));
    graph->setName(tr(g.title));
    graph->setAdaptiveSampling(false);  // every point matters
    graphs_.push_back(graph);
  }

  add_export_menu(this, this);
  setMouseTracking(true);
  connect(this, &QCustomPlot::mouseMove, this, &TsnePlot::show_tooltip);
  rebuild();
}

QSize TsnePlot::minimumSizeHint() const { return {480, 380}; }
QSize TsnePlot::sizeHint() const { return {760, 520}; }

QString TsnePlot::group_title(const QString& group) {
  const int i = group_index(group);
  return tr(kGroups[i < 0 ? other_group() : i].title);
}

QCPGraph* TsnePlot::group_graph(const QString& group) const {
  const int i = group_index(group);
  return i < 0 ? nullptr : graphs_[static_cast<std::size_t>(i)];
}

bool TsnePlot::set_snapshot(const std::string& json, QString* error) {
  using Json = nlohmann::json;
  auto fail = [&](const QString& why) {
    if (error) *error = tr("t-SNE snapshot not shown: %1").arg(why);
    return false;
  };
  const Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return fail(tr("the text is not valid JSON"));
  if (!doc.is_object()) return fail(tr("expected a JSON object"));
  const auto pts = doc.find("points");
  if (pts == doc.end() || !pts->is_array()) return fail(tr("\"points\" is missing or not an array"));

  std::vector<Point> points;
  points.reserve(pts->size());
  for (std::size_t i = 0; i < pts->size(); ++i) {
    const Json& p = (*pts)[i];
    const QString where = QStringLiteral("points[%1]").arg(i);
    if (!p.is_object()) return fail(tr("%1 is not an object").arg(where));
    const auto x = p.find("x"), y = p.find("y"), group = p.find("group");
    if (x == p.end() || y == p.end() || !x->is_number() || !y->is_number())
      return fail(tr("%1 needs numeric \"x\" and \"y\"").arg(where));
    if (group == p.end() || !group->is_string()) return fail(tr("%1 needs a string \"group\"").arg(where));
    Point point;
    point.x = x->get<double>();
    point.y = y->get<double>();
    if (!std::isfinite(point.x) || !std::isfinite(point.y)) return fail(tr("%1 has a non-finite coordinate").arg(where));
    const int g = group_index(QString::fromStdString(group->get<std::string>()));
    point.group = g < 0 ? other_group() : g;
    if (const auto label = p.find("label"); label != p.end() && label->is_number_integer())
      point.label = label->get<std::int64_t>();
    if (const auto text = p.find("text"); text != p.end() && text->is_string())
      point.text = QString::fromStdString(text->get<std::string>());
    points.push_back(std::move(point));
  }

  const auto query_text = doc.find("query_text");
  const QString qtext = query_text != doc.end() && query_text->is_string() ? QString::fromStdString(query_text->get<std::string>())
                                                                            : QString();
  for (Point& p : points)
    if (p.text.isEmpty() && p.group == group_index(QStringLiteral("query"))) p.text = qtext;

  QStringList parts;
  if (const auto q = doc.find("query"); q != doc.end() && q->is_number_integer()) parts << tr("query %1").arg(q->get<std::int64_t>());
  if (const auto e = doc.find("epoch"); e != doc.end() && e->is_number()) parts << tr("epoch %1").arg(e->get<double>(), 0, 'g', 4);
  if (const auto s = doc.find("step"); s != doc.end() && s->is_number_integer()) parts << tr("step %1").arg(s->get<std::int64_t>());
  if (const auto b = doc.find("batch_queries"); b != doc.end() && b->is_number_integer())
    parts << tr("batch of %1 queries").arg(b->get<std::int64_t>());
  QString subtitle = parts.join(QStringLiteral(" · "));
  if (!qtext.isEmpty()) subtitle += (subtitle.isEmpty() ? QString() : QStringLiteral(": ")) + QStringLiteral("“%1”").arg(qtext.simplified());

  points_ = std::move(points);
  subtitle_text_ = subtitle;
  if (error) error->clear();
  rebuild();
  return true;
}

void TsnePlot::clear() {
  points_.clear();
  subtitle_text_.clear();
  rebuild();
}

int TsnePlot::group_count() const {
  int n = 0;
  for (const QCPGraph* g : graphs_) n += g->data()->isEmpty() ? 0 : 1;
  return n;
}

int TsnePlot::point_count() const { return static_cast<int>(points_.size()); }

void TsnePlot::rebuild() {
  std::vector<QVector<double>> xs(graphs_.size()), ys(graphs_.size());
  for (const Point& p : points_) {
    xs[static_cast<std::size_t>(p.group)].append(p.x);
    ys[static_cast<std::size_t>(p.group)].append(p.y);
  }
  for (std::size_t i = 0; i < graphs_.size(); ++i) graphs_[i]->setData(xs[i], ys[i]);

  // Legend: non-empty groups, query first.
  legend->clearItems();
  std::vector<int> order;
  for (int i = 0; i < kGroupCount; ++i)
    if (!graphs_[static_cast<std::size_t>(i)]->data()->isEmpty()) order.push_back(i);
  std::sort(order.begin(), order.end(), [](int a, int b) { return kGroups[a].legend_rank < kGroups[b].legend_rank; });
  for (int i : order) graphs_[static_cast<std::size_t>(i)]->addToLegend(legend);
  legend->setVisible(!order.empty());

  // Ranges: all points with a margin, so markers at the edge stay whole.
  if (points_.empty()) {
    xAxis->setRange(-1, 1);
    yAxis->setRange(-1, 1);
  } else {
    auto [x_min, x_max] = std::minmax_element(points_.begin(), points_.end(), [](const Point& a, const Point& b) { return a.x < b.x; });
    auto [y_min, y_max] = std::minmax_element(points_.begin(), points_.end(), [](const Point& a, const Point& b) { return a.y < b.y; });
    const double wx = std::max(x_max->x - x_min->x, 1e-6), wy = std::max(y_max->y - y_min->y, 1e-6);
    xAxis->setRange(x_min->x - 0.06 * wx, x_max->x + 0.06 * wx);
    yAxis->setRange(y_min->y - 0.06 * wy, y_max->y + 0.06 * wy);
  }
  update_subtitle();
  replot(QCustomPlot::rpQueuedReplot);
}

void TsnePlot::update_subtitle() {
  const QString full = subtitle_text_.isEmpty() ? (points_.empty() ? tr("no snapshot yet") : QString()) : subtitle_text_;
  const QFontMetrics metrics(subtitle_->font());
  subtitle_->setText(metrics.elidedText(full, Qt::ElideRight, std::max(100, width() - 40)));
}

void TsnePlot::place_legend() {
  const bool beside = width() >= kSideLegendMinWidth;
  QCPLayoutGrid* from = beside ? bottom_ : side_;
  QCPLayoutGrid* to = beside ? side_ : bottom_;
  const int to_column = beside ? 0 : 1;
  const int to_row = 0;
  if (from->elements(false).contains(legend)) {
    from->take(legend);
    to->addElement(to_row, to_column, legend);
  }
  if (beside) {
    if (legend->wrap() != 0 || legend->fillOrder() != QCPLegend::foRowsFirst) {
      legend->setWrap(0);
      legend->setFillOrder(QCPLegend::foRowsFirst, true);
    }
    legend->setMargins(QMargins(4, 10, 10, 4));
  } else {
    legend->setMargins(QMargins(6, 2, 6, 4));
    style::fit_legend_columns(this, legend, 3);
  }
}

int TsnePlot::nearest_point(double x, double y, double max_px) const {
  const bool on_screen = axisRect()->width() > 10 && axisRect()->height() > 10;
  // Plot units → pixels (1:1 before the first layout).
  const double sx = on_screen ? axisRect()->width() / xAxis->range().size() : 1;
  const double sy = on_screen ? axisRect()->height() / yAxis->range().size() : 1;
  int best = -1;
  double best_d2 = max_px < 0 ? std::numeric_limits<double>::infinity() : max_px * max_px;
  // Later groups are drawn on top: prefer them among equally near points.
  for (int i = 0; i < static_cast<int>(points_.size()); ++i) {
    const Point& p = points_[static_cast<std::size_t>(i)];
    const double dx = (p.x - x) * sx, dy = (p.y - y) * sy;
    const double d2 = dx * dx + dy * dy;
    if (d2 < best_d2 || (d2 == best_d2 && best >= 0 && p.group > points_[static_cast<std::size_t>(best)].group)) {
      best_d2 = d2;
      best = i;
    }
  }
  return best;
}

QString TsnePlot::text_at(double x, double y) const {
  const int i = nearest_point(x, y, -1);
  return i < 0 ? QString() : points_[static_cast<std::size_t>(i)].text;
}

void TsnePlot::show_tooltip(QMouseEvent* event) {
  const QPointF pos = event->position();
  const int i = axisRect()->rect().contains(pos.toPoint())
                    ? nearest_point(xAxis->pixelToCoord(pos.x()), yAxis->pixelToCoord(pos.y()), kHoverRadiusPx)
                    : -1;
  if (i < 0) {
    QToolTip::hideText();
    return;
  }
  const Point& p = points_[static_cast<std::size_t>(i)];
  QString head = QStringLiteral("<b>%1</b>").arg(tr(kGroups[p.group].title).toHtmlEscaped());
  if (p.label >= 0) head += tr(" · label %1").arg(p.label);
  QString text = p.text.simplified();
  if (text.size() > kTooltipTextChars) text = text.left(kTooltipTextChars) + QStringLiteral("…");
  QToolTip::showText(event->globalPosition().toPoint(),
                     head + (text.isEmpty() ? QString() : QStringLiteral("<br>") + text.toHtmlEscaped()), this);
}

void TsnePlot::set_empty_note(const QString& text) {
  empty_note_->setText(text);
  replot(QCustomPlot::rpQueuedReplot);
}

QString TsnePlot::empty_note() const { return empty_note_->text(); }

}  // namespace xmc::gui
