#include "widgets/plots/loss_plot.h"

#include <algorithm>
#include <QActionGroup>
#include <QDateTime>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QSlider>
#include <QWidgetAction>
#include <cmath>
#include <limits>

#include "widgets/plots/plot_style.h"

namespace xmc::gui {
namespace {

namespace style = plot_style;

constexpr int kRefreshIntervalMs = 100;  // at most 10 redraws per second
constexpr int kMaxWindow = 50;           // automatic smoothing: at most a 50-point window (weight 0.98)
constexpr int kPointsPerWindow = 25;     // ... and about 1/25 of the points
constexpr int kMinHeightForStrip = 330;  // lower plots leave the throughput strip out

QPen pen(QColor color, double width, Qt::PenStyle style = Qt::SolidLine) {
  QPen p(color, width, style);
  p.setCapStyle(Qt::RoundCap);
  p.setJoinStyle(Qt::RoundJoin);
  return p;
}

bool usable(double v) { return std::isfinite(v) && v > 0; }

// q-quantile of `values` (reorders them), 0 <= q <= 1.
double quantile(std::vector<double>& values, double q) {
  const auto n = values.size();
  auto k = static_cast<std::size_t>(q * static_cast<double>(n - 1) + 0.5);
  k = std::min(k, n - 1);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

}  // namespace

double LossPlot::Ema::next(double x, double weight) {
  value = weight * value + (1 - weight) * x;
  weight_power *= weight;
  const double correction = 1 - weight_power;
  return correction > 0 ? value / correction : x;
}

LossPlot::LossPlot(QWidget* parent) : QCustomPlot(parent) {
  style::style_plot(this, tr("Training loss"));
  style::add_empty_note(this, tr("no training steps yet"));
  main_rect_ = axisRect();
  title_ = style::make_title(this, tr("Training loss"));
  reset_gaps();
  clipped_note_ = new QCPItemText(this);
  clipped_note_->setClipToAxisRect(false);
  clipped_note_->position->setType(QCPItemPosition::ptAxisRectRatio);
  clipped_note_->position->setAxisRect(main_rect_);
  clipped_note_->position->setCoords(0.01, 0.01);
  clipped_note_->setPositionAlignment(Qt::AlignLeft | Qt::AlignTop);
  clipped_note_->setFont(style::font(this, 9));
  clipped_note_->setColor(QColor(0x66, 0x66, 0x66));
  clipped_note_->setSelectable(false);
  clipped_note_->setVisible(false);

  // Main rect: loss (left) and learning rate (right) against the step.
  style::style_axis(xAxis, tr("step"));
  style::style_axis(yAxis, tr("loss"));
  style::style_axis(yAxis2, tr("learning rate"));
  yAxis2->setVisible(true);
  yAxis2->grid()->setVisible(false);
  yAxis2->setNumberFormat(QStringLiteral("gbc"));  // 0.005, 0.001 …; small rates switch to 5×10⁻⁵
  yAxis2->setNumberPrecision(2);
  yAxis2->setRange(0, 1);
  xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new style::IntegerTicker));  // steps are whole numbers
  xAxis->setNumberFormat(QStringLiteral("f"));
  xAxis->setNumberPrecision(0);

  // Throughput strip below, put into the layout once throughput data exist.
  throughput_rect_ = new QCPAxisRect(this);
  throughput_rect_->setVisible(false);
  QCPAxis* tp_x = throughput_rect_->axis(QCPAxis::atBottom);
  QCPAxis* tp_y = throughput_rect_->axis(QCPAxis::atLeft);
  style::style_axis(tp_x, tr("step"));
  style::style_axis(tp_y, tr("queries/s"));
  tp_x->setTicker(QSharedPointer<QCPAxisTicker>(new style::IntegerTicker));
  tp_x->setNumberFormat(QStringLiteral("f"));
  tp_x->setNumberPrecision(0);
  tp_y->ticker()->setTickCount(2);
  tp_y->setSubTicks(false);
  QCPAxis* tp_right = throughput_rect_->addAxis(QCPAxis::atRight);  // a closed frame, like the rect above
  tp_right->setTicks(false);
  tp_right->setSubTicks(false);
  tp_right->setTickLabels(false);
  auto* margins = new QCPMarginGroup(this);
  main_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
  throughput_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
  connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), tp_x, qOverload<const QCPRange&>(&QCPAxis::setRange));

  // The system-use strip, in the same place when chosen instead: memory (left) and CPU cores (right).
  system_rect_ = new QCPAxisRect(this);
  system_rect_->setVisible(false);
  QCPAxis* sys_x = system_rect_->axis(QCPAxis::atBottom);
  QCPAxis* sys_memory = system_rect_->axis(QCPAxis::atLeft);
  QCPAxis* sys_cpu = system_rect_->addAxis(QCPAxis::atRight);
  style::style_axis(sys_x, tr("step"));
  style::style_axis(sys_memory, tr("memory (GB)"));
  style::style_axis(sys_cpu, tr("CPU cores"));
  sys_x->setTicker(QSharedPointer<QCPAxisTicker>(new style::IntegerTicker));
  sys_x->setNumberFormat(QStringLiteral("f"));
  sys_x->setNumberPrecision(0);
  for (QCPAxis* a : {sys_memory, sys_cpu}) {
    a->ticker()->setTickCount(2);
    a->setSubTicks(false);
  }
  sys_cpu->grid()->setVisible(false);
  system_rect_->setMarginGroup(QCP::msLeft | QCP::msRight, margins);
  connect(xAxis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), sys_x, qOverload<const QCPRange&>(&QCPAxis::setRange));

  raw_ = addGraph(xAxis, yAxis);
  raw_->setName(tr("loss"));
  raw_->setPen(pen(QColor(0x56, 0xB4, 0xE9, 150), 1));
  stage_raw_ = addGraph(xAxis, yAxis);
  stage_raw_->setName(tr("later stage's loss"));
  stage_raw_->setPen(pen(QColor(0x66, 0xC5, 0xAB, 150), 1));
  lr_ = addGraph(xAxis, yAxis2);
  lr_->setName(tr("learning rate"));
  lr_->setPen(pen(style::kOrange, 1.6, Qt::DashLine));
  smoothed_ = addGraph(xAxis, yAxis);
  smoothed_->setPen(pen(style::kBlue, 2.5));
  stage_smoothed_ = addGraph(xAxis, yAxis);
  stage_smoothed_->setPen(pen(style::kGreen, 2.5));
  throughput_ = addGraph(tp_x, tp_y);
  throughput_->setName(tr("throughput"));
  throughput_->setPen(pen(style::kPurple, 1.5));
  stage_throughput_ = addGraph(tp_x, tp_y);
  stage_throughput_->setName(tr("later stage's throughput"));
  stage_throughput_->setPen(pen(style::kGreen, 1.5));
  memory_ = addGraph(sys_x, sys_memory);
  memory_->setName(tr("memory (GB)"));
  memory_->setPen(pen(style::kPurple, 1.5));  // never beside throughput (purple too): one strip or the other
  cpu_ = addGraph(sys_x, sys_cpu);
  cpu_->setName(tr("CPU cores busy"));
  cpu_->setPen(pen(style::kVermillion, 1.5, Qt::DotLine));  // shares the legend with the learning rate (orange dashed)

  // Legend in its own row under the plot, so it never covers a curve.
  main_rect_->insetLayout()->take(legend);
  style::style_legend(legend);
  legend_row_ = style::add_centred_row(this, 1, legend);
  // The strip comes and goes with the data, the user's choice and the plot's height; the legend follows.
  connect(this, &QCustomPlot::beforeReplot, this, [this] {
    arrange_layout();
    update_legend();
  });
  style::keep_legend_fitting(this, legend, 4);
  arrange_layout();

  // Any range change that rescale() did not make is the user's (drag, wheel): stop following the data
  // until a double click.
  setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  for (QCPAxis* axis : {xAxis, yAxis})
    connect(axis, qOverload<const QCPRange&>(&QCPAxis::rangeChanged), this, [this] {
      if (!rescaling_) follow_data_ = false;
    });
  connect(this, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) {
    follow_data_ = true;
    refresh();
  });

  // Right-click: the smoothing (automatic by default, as TensorBoard's slider's usual values) and a log axis.
  auto* smoothing = new QMenu(tr("Smoothing"), this);
  auto* smoothing_choices = new QActionGroup(this);
  const std::pair<QString, double> weights[] = {{tr("automatic"), -1}, {tr("none (raw)"), 0}, {QStringLiteral("EMA 0.6"), 0.6},
                                                {QStringLiteral("EMA 0.9"), 0.9}, {QStringLiteral("EMA 0.99"), 0.99}};
  for (const auto& [label, weight] : weights) {
    QAction* choice = smoothing->addAction(label);
    choice->setCheckable(true);
    choice->setChecked(weight < 0);
    smoothing_choices->addAction(choice);
    connect(choice, &QAction::triggered, this, [this, w = weight] { set_smoothing(w); });
  }
  // A slider for any weight, as TensorBoard's (0 = raw, 0.99 = very smooth).
  auto* slider_action = new QWidgetAction(smoothing);
  auto* slider_box = new QWidget;
  auto* slider_layout = new QHBoxLayout(slider_box);
  slider_layout->setContentsMargins(8, 2, 8, 2);
  auto* slider = new QSlider(Qt::Horizontal);
  slider->setObjectName(QStringLiteral("smoothing_slider"));
  slider->setRange(0, 99);
  slider->setMinimumWidth(140);
  auto* slider_value = new QLabel(tr("EMA —"));
  slider_layout->addWidget(slider, 1);
  slider_layout->addWidget(slider_value);
  slider_action->setDefaultWidget(slider_box);
  smoothing->addSeparator();
  smoothing->addAction(slider_action);
  connect(slider, &QSlider::valueChanged, this, [this, slider_value, smoothing_choices](int v) {
    for (QAction* a : smoothing_choices->actions()) a->setChecked(false);
    slider_value->setText(tr("EMA %1").arg(v / 100.0, 0, 'f', 2));
    set_smoothing(v / 100.0);
  });
  smoothing_slider_ = slider;
  addAction(smoothing->menuAction());
  auto* x_menu = new QMenu(tr("x axis"), this);
  auto* x_choices = new QActionGroup(this);
  const std::pair<QString, XAxis> x_axes[] = {{tr("step"), XAxis::Step}, {tr("epoch"), XAxis::Epoch}, {tr("wall time"), XAxis::WallTime}};
  for (const auto& [label, axis] : x_axes) {
    QAction* choice = x_menu->addAction(label);
    choice->setCheckable(true);
    choice->setChecked(axis == XAxis::Step);
    x_choices->addAction(choice);
    connect(choice, &QAction::triggered, this, [this, a = axis] { set_x_axis(a); });
  }
  addAction(x_menu->menuAction());
  log_action_ = new QAction(tr("Logarithmic loss axis"), this);
  log_action_->setCheckable(true);
  connect(log_action_, &QAction::toggled, this, &LossPlot::set_log_scale);
  addAction(log_action_);

  auto* strip_menu = new QMenu(tr("Strip below"), this);
  auto* strip_choices = new QActionGroup(this);
  const std::pair<QString, Strip> strips[] = {{tr("throughput"), Strip::Throughput},
                                              {tr("memory and CPU of the training process"), Strip::SystemUse},
                                              {tr("none"), Strip::None}};
  for (const auto& [label, strip] : strips) {
    QAction* choice = strip_menu->addAction(label);
    choice->setCheckable(true);
    choice->setChecked(strip == strip_);
    strip_choices->addAction(choice);
    connect(choice, &QAction::triggered, this, [this, s = strip] { set_strip(s); });
    strip_actions_[static_cast<std::size_t>(strip)] = choice;
  }
  addAction(strip_menu->menuAction());
  add_export_menu(this, this);

  refresh_timer_.setSingleShot(true);
  refresh_timer_.setInterval(kRefreshIntervalMs);
  connect(&refresh_timer_, &QTimer::timeout, this, &LossPlot::refresh);
  refresh();
}

QSize LossPlot::minimumSizeHint() const { return {400, 280}; }
QSize LossPlot::sizeHint() const { return {720, 440}; }

void LossPlot::add_loss(QCPGraph* raw, QCPGraph* smoothed, Ema& ema, double step, double loss) {
  raw->addData(step, loss);
  if (std::isfinite(loss)) smoothed->addData(step, ema.next(loss, ema_weight_));
}

QString LossPlot::x_label() const {
  return x_axis_ == XAxis::Epoch ? tr("epoch") : x_axis_ == XAxis::WallTime ? tr("wall time (min)") : tr("step");
}

double LossPlot::x_of(const Record& r) const {
  switch (x_axis_) {
    case XAxis::Epoch: return std::isfinite(r.epoch) ? r.epoch : r.step;
    case XAxis::WallTime: return std::isfinite(r.wall) && std::isfinite(first_wall_) ? (r.wall - first_wall_) / 60.0 : r.step;
    default: return r.step;
  }
}

void LossPlot::reset_gaps() {
  last_x_.fill(std::numeric_limits<double>::quiet_NaN());
  last_interval_.fill(std::numeric_limits<double>::quiet_NaN());
}

void LossPlot::draw_record(const Record& r) {
  const double x = x_of(r);
  if (x_axis_ == XAxis::WallTime && r.series >= 0 && r.series < static_cast<int>(last_x_.size())) {
    // A gap in wall time ten times the usual interval (and over two seconds): a NaN point breaks the line there.
    constexpr double kGapFactor = 10, kMinGapMinutes = 2.0 / 60.0;
    const auto s = static_cast<std::size_t>(r.series);
    const double interval = x - last_x_[s];
    if (std::isfinite(interval) && std::isfinite(last_interval_[s]) && interval > kMinGapMinutes &&
        interval > kGapFactor * std::max(last_interval_[s], 1e-6)) {
      const double mid = last_x_[s] + interval / 2, gap = std::numeric_limits<double>::quiet_NaN();
      switch (r.series) {
        case 0: raw_->addData(mid, gap), smoothed_->addData(mid, gap); break;
        case 1: stage_raw_->addData(mid, gap), stage_smoothed_->addData(mid, gap); break;
        case 2: lr_->addData(mid, gap); break;
        case 3: throughput_->addData(mid, gap); break;
        case 4: stage_throughput_->addData(mid, gap); break;
        case 5: memory_->addData(mid, gap); break;
        case 6: cpu_->addData(mid, gap); break;
        default: break;
      }
    } else if (std::isfinite(interval)) {
      last_interval_[s] = interval;
    }
    if (std::isfinite(interval) && !std::isfinite(last_interval_[s])) last_interval_[s] = interval;
    last_x_[s] = x;
  }
  switch (r.series) {
    case 0: add_loss(raw_, smoothed_, ema_, x, r.value); break;
    case 1: add_loss(stage_raw_, stage_smoothed_, stage_ema_, x, r.value); break;
    case 2: lr_->addData(x, r.value); break;
    case 3: throughput_->addData(x, r.value); break;
    case 4: stage_throughput_->addData(x, r.value); break;
    case 5: memory_->addData(x, r.value); break;
    case 6: cpu_->addData(x, r.value); break;
    default: break;
  }
}

bool LossPlot::is_loss_series(const std::string& key) { return key == "loss" || (key.size() > 5 && key.ends_with("_loss")); }

void LossPlot::name_stage_series(const std::string& key) {
  // "m4_loss" -> "M4 loss": the key a stage declared for its loss (method/training_stages.h), read as words.
  QString words = QString::fromStdString(key.substr(0, key.size() - 5)).replace('_', ' ');
  if (!words.isEmpty()) words[0] = words[0].toUpper();
  const QString label = words + tr(" loss");
  if (label == stage_label_) return;
  stage_label_ = label;
  stage_raw_->setName(label);
  stage_throughput_->setName(words + tr(" throughput"));
  stage_smoothed_->setName(tr("%1, EMA %2").arg(label).arg(ema_weight_, 0, 'g', 3));
}

void LossPlot::append(std::int64_t step, double loss, double lr, double samples_per_s, const std::string& loss_series, double epoch,
                      double wall_time) {
  const bool later_stage = loss_series != "loss";
  if (later_stage && is_loss_series(loss_series)) name_stage_series(loss_series);
  const auto s = static_cast<double>(step);
  const double wall = std::isfinite(wall_time) ? wall_time : static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0;
  if (!std::isfinite(first_wall_)) first_wall_ = wall;
  auto record = [&](int series, double value) {
    records_.push_back({series, s, epoch, wall, value});
    draw_record(records_.back());
  };
  record(later_stage ? 1 : 0, loss);
  if (std::isfinite(lr) && lr >= 0) record(2, lr);
  if (usable(samples_per_s)) record(later_stage ? 4 : 3, samples_per_s);
  schedule_refresh();
}

void LossPlot::append_point(const xmc::ScalarPoint& point) {
  int series = -1;
  if (point.key == "loss") {
    series = 0;
  } else if (is_loss_series(point.key)) {
    series = 1;
    name_stage_series(point.key);
    stage_step_ = point.step;  // the store gives a step's loss before its rate
  } else if (point.key == "lr") {
    if (std::isfinite(point.value) && point.value >= 0) series = 2;
  } else if (point.key == "samples_per_s") {
    if (usable(point.value)) series = point.step == stage_step_ ? 4 : 3;
  } else if (point.key == "system/memory_gb") {
    if (std::isfinite(point.value) && point.value >= 0) series = 5;
  } else if (point.key == "system/cpu_cores") {
    if (std::isfinite(point.value) && point.value >= 0) series = 6;
  }
  if (series < 0) return;
  const double wall = point.wall_time > 0 ? point.wall_time : std::numeric_limits<double>::quiet_NaN();
  if (!std::isfinite(first_wall_) && std::isfinite(wall)) first_wall_ = wall;
  records_.push_back({series, static_cast<double>(point.step), point.epoch, wall, point.value});
  draw_record(records_.back());
  schedule_refresh();
}

void LossPlot::set_x_axis(XAxis axis) {
  x_axis_ = axis;
  for (QCPGraph* g : {raw_, smoothed_, stage_raw_, stage_smoothed_, lr_, throughput_, stage_throughput_, memory_, cpu_}) g->data()->clear();
  reset_gaps();
  ema_ = {};
  stage_ema_ = {};
  for (const Record& r : records_) draw_record(r);
  const QString label = x_label();
  xAxis->setLabel(strip_shown_ ? QString() : label);  // with the strip shown, the axis is named once, below it
  throughput_rect_->axis(QCPAxis::atBottom)->setLabel(label);
  system_rect_->axis(QCPAxis::atBottom)->setLabel(label);
  // Steps are whole numbers; epochs and minutes are not.
  const bool whole = axis == XAxis::Step;
  for (QCPAxis* a : {xAxis, throughput_rect_->axis(QCPAxis::atBottom), system_rect_->axis(QCPAxis::atBottom)}) {
    a->setTicker(whole ? QSharedPointer<QCPAxisTicker>(new style::IntegerTicker) : QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    a->setNumberFormat(whole ? QStringLiteral("f") : QStringLiteral("g"));
    a->setNumberPrecision(whole ? 0 : 4);
  }
  resmooth();
  follow_data_ = true;
  arrange_layout();
  refresh();
}

void LossPlot::set_series(const std::vector<xmc::ScalarPoint>& points) {
  clear();
  for (const auto& p : points) append_point(p);
  refresh_timer_.stop();
  refresh();
}

void LossPlot::clear() {
  for (QCPGraph* g : {raw_, smoothed_, stage_raw_, stage_smoothed_, lr_, throughput_, stage_throughput_, memory_, cpu_}) g->data()->clear();
  records_.clear();
  reset_gaps();
  first_wall_ = std::numeric_limits<double>::quiet_NaN();
  stage_step_ = -1;
  ema_ = {};
  stage_ema_ = {};
  follow_data_ = true;
  refresh_timer_.stop();
  refresh();
}

QString LossPlot::clipped_note() const { return clipped_note_->visible() ? clipped_note_->text() : QString(); }

std::size_t LossPlot::point_count() const {
  return static_cast<std::size_t>(raw_->dataCount()) + static_cast<std::size_t>(stage_raw_->dataCount());
}

void LossPlot::set_smoothing(double weight) {
  smoothing_ = weight < 0 ? -1 : std::min(weight, 0.999);
  refresh();
}

double LossPlot::wanted_weight() const {
  if (smoothing_ >= 0) return smoothing_;
  const int n = std::max(raw_->dataCount(), stage_raw_->dataCount());
  int window = 1;
  while (window * 2 <= n / kPointsPerWindow && window * 2 <= kMaxWindow) window *= 2;
  if (n / kPointsPerWindow >= kMaxWindow) window = kMaxWindow;
  return 1.0 - 1.0 / (window + 1);
}

// Recomputes both smoothed curves from the raw ones with ema_weight_.
void LossPlot::resmooth() {
  const struct {
    QCPGraph* raw;
    QCPGraph* smoothed;
    Ema* ema;
  } pairs[] = {{raw_, smoothed_, &ema_}, {stage_raw_, stage_smoothed_, &stage_ema_}};
  for (const auto& p : pairs) {
    *p.ema = {};
    QVector<double> keys, values;
    keys.reserve(p.raw->dataCount());
    values.reserve(p.raw->dataCount());
    for (const auto& d : *p.raw->data()) {
      if (std::isnan(d.value)) {  // a break in the line (a wall-time gap, a NaN loss) breaks the smoothed one too
        keys.append(d.key);
        values.append(d.value);
        continue;
      }
      if (!std::isfinite(d.value)) continue;
      keys.append(d.key);
      values.append(p.ema->next(d.value, ema_weight_));
    }
    p.smoothed->setData(keys, values, true);
  }
}

bool LossPlot::throughput_log_scale() const {
  return throughput_rect_->axis(QCPAxis::atLeft)->scaleType() == QCPAxis::stLogarithmic;
}

void LossPlot::set_log_scale(bool on) {
  log_scale_ = on;
  if (log_action_->isChecked() != on) log_action_->setChecked(on);
  yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  yAxis->setTicker(on ? QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog) : QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  yAxis->setLabel(on ? tr("loss (log)") : tr("loss"));
  follow_data_ = true;
  refresh();
}

void LossPlot::set_strip(Strip strip) {
  strip_ = strip;
  if (QAction* a = strip_actions_[static_cast<std::size_t>(strip)]; a && !a->isChecked()) a->setChecked(true);
  refresh();
}

QCPAxisRect* LossPlot::strip_rect(Strip strip) const {
  return strip == Strip::Throughput ? throughput_rect_ : strip == Strip::SystemUse ? system_rect_ : nullptr;
}

void LossPlot::schedule_refresh() {
  if (!refresh_timer_.isActive()) refresh_timer_.start();
}

void LossPlot::refresh() {
  if (const double w = wanted_weight(); w != ema_weight_) {
    ema_weight_ = w;
    resmooth();
  }
  const QString ema = tr("EMA %1").arg(ema_weight_, 0, 'g', 3);
  smoothed_->setName(tr("loss, %1").arg(ema));
  stage_smoothed_->setName(tr("%1, %2").arg(stage_label_, ema));
  arrange_layout();
  update_legend();
  if (follow_data_) rescale();
  replot(QCustomPlot::rpQueuedReplot);
}

// Title / loss rect / [strip: throughput or system use] / legend, top to bottom.
void LossPlot::arrange_layout() {
  const bool has_data = strip_ == Strip::Throughput ? !(throughput_->data()->isEmpty() && stage_throughput_->data()->isEmpty())
                        : strip_ == Strip::SystemUse ? !(memory_->data()->isEmpty() && cpu_->data()->isEmpty())
                                                     : false;
  const bool show = has_data && height() >= kMinHeightForStrip;
  QCPAxisRect* const strip = show ? strip_rect(strip_) : nullptr;
  QCPLayoutGrid* layout = plotLayout();
  const QList<QCPLayoutElement*> present = layout->elements(false);
  if (show == strip_shown_ && (!strip || present.contains(strip)) && layout->hasElement(0, 0) && layout->element(0, 0) == title_) return;
  for (QCPLayoutElement* e : {static_cast<QCPLayoutElement*>(title_), static_cast<QCPLayoutElement*>(main_rect_),
                              static_cast<QCPLayoutElement*>(throughput_rect_), static_cast<QCPLayoutElement*>(system_rect_),
                              static_cast<QCPLayoutElement*>(legend_row_)})
    if (present.contains(e)) layout->take(e);
  layout->simplify();
  int row = 0;
  layout->addElement(row, 0, title_);
  layout->setRowStretchFactor(row++, 0.001);
  layout->addElement(row, 0, main_rect_);
  layout->setRowStretchFactor(row++, 1);
  if (strip) {
    layout->addElement(row, 0, strip);
    layout->setRowStretchFactor(row++, 0.3);
  }
  layout->addElement(row, 0, legend_row_);
  layout->setRowStretchFactor(row, 0.001);
  layout->setRowSpacing(0);
  throughput_rect_->setVisible(strip == throughput_rect_);
  system_rect_->setVisible(strip == system_rect_);
  // With the strip shown, the step axis is labelled once, at the bottom.
  xAxis->setTickLabels(!show);
  xAxis->setLabel(show ? QString() : x_label());
  strip_shown_ = show;
}

// The legend lists only curves that have data, always in the same order.
void LossPlot::update_legend() {
  const QList<QCPGraph*> order = {raw_, smoothed_, stage_raw_, stage_smoothed_, lr_, throughput_, stage_throughput_, memory_, cpu_};
  QList<QCPGraph*> wanted;
  for (QCPGraph* g : order) {
    const bool has_data = !g->data()->isEmpty() && g->visible();
    const bool in_throughput = g == throughput_ || g == stage_throughput_, in_system = g == memory_ || g == cpu_;
    const bool shown = (!in_throughput && !in_system) || (strip_shown_ && (in_throughput ? strip_ == Strip::Throughput : strip_ == Strip::SystemUse));
    if (has_data && shown) wanted.append(g);
  }
  bool same = legend->itemCount() == wanted.size();
  for (int i = 0; same && i < wanted.size(); ++i) same = legend->itemWithPlottable(wanted[i]) == legend->item(i);
  if (same) return;
  legend->clearItems();
  for (QCPGraph* g : wanted) g->addToLegend(legend);
  legend->setVisible(!wanted.isEmpty());
}

void LossPlot::rescale() {
  rescaling_ = true;
  // Steps.
  bool found = false;
  QCPRange steps;
  for (QCPGraph* g : {raw_, stage_raw_, lr_, throughput_, stage_throughput_}) {
    bool ok = false;
    const QCPRange r = g->data()->keyRange(ok);
    if (!ok) continue;
    steps = found ? QCPRange(std::min(steps.lower, r.lower), std::max(steps.upper, r.upper)) : r;
    found = true;
  }
  if (!found) {
    xAxis->setRange(0, 100);
  } else if (steps.size() <= 0) {
    xAxis->setRange(steps.lower - 1, steps.upper + 1);
  } else {
    xAxis->setRange(steps.lower, steps.upper + 0.01 * steps.size());
  }

  // Loss: the 1st–98th percentile of all finite losses, so a huge first step does not squash the rest.
  scratch_.clear();
  for (QCPGraph* g : {raw_, stage_raw_})
    for (const auto& d : *g->data())
      if (std::isfinite(d.value)) scratch_.push_back(d.value);
  if (scratch_.empty()) {
    yAxis->setRange(0, 1);
  } else {
    const bool robust = scratch_.size() >= 20;
    double lo = robust ? quantile(scratch_, 0.01) : *std::min_element(scratch_.begin(), scratch_.end());
    double hi = robust ? quantile(scratch_, 0.98) : *std::max_element(scratch_.begin(), scratch_.end());
    for (QCPGraph* g : {smoothed_, stage_smoothed_}) {  // the smoothed curve's tail must stay in view
      if (g->data()->isEmpty()) continue;
      const double last = (g->data()->constEnd() - 1)->value;
      lo = std::min(lo, last);
      hi = std::max(hi, last);
    }
    const double pad = hi > lo ? 0.06 * (hi - lo) : std::max(std::abs(hi) * 0.1, 1e-3);
    double lower = lo - pad;
    if (lo >= 0) lower = std::max(0.0, lower);
    if (log_scale_) {
      // Only positive losses have a place on a log axis: from the smallest positive one.
      double smallest = std::numeric_limits<double>::max();
      for (double v : scratch_)
        if (v > 0) smallest = std::min(smallest, v);
      if (smallest == std::numeric_limits<double>::max()) smallest = 1e-3;
      const double top = *std::max_element(scratch_.begin(), scratch_.end());  // a log axis has room for every loss
      yAxis->setRange(std::min(std::max(lo, smallest), hi) / 1.3, std::max(top, smallest) * 1.3);
    } else {
      yAxis->setRange(lower, hi + pad);
    }
  }
  // Say what the cut leaves out: losses above the top of the axis (the first steps', usually).
  int above = 0;
  double highest = 0;
  for (const double v : scratch_)
    if (v > yAxis->range().upper) ++above, highest = std::max(highest, v);
  clipped_note_->setVisible(above > 0);
  if (above > 0)
    clipped_note_->setText((above == 1 ? tr("▲ 1 loss above the axis, up to %1") : tr("▲ %1 losses above the axis, up to %2").arg(above))
                               .arg(highest, 0, 'g', 4) + tr(" (right-click › log axis shows all)"));

  bool ok = false;
  const QCPRange lr = lr_->data()->valueRange(ok);
  yAxis2->setRange(0, ok && lr.upper > 0 ? lr.upper * 1.08 : 1);
  yAxis2->setTickLabels(ok);  // no made-up 0…1 scale before the first learning rate
  // A method fitted without gradients (xrlinear) records no rate beside its losses (runs stored before: a rate of 0):
  // no axis, no curve for it. Before the first step the axis stays, named.
  const bool has_losses = !raw_->data()->isEmpty() || !stage_raw_->data()->isEmpty();
  const bool without_rate = ok ? !(lr.upper > 0) : has_losses;
  yAxis2->setVisible(!without_rate);
  lr_->setVisible(!without_rate);
  // Throughput: a log axis when the rates span more than 10× (M4 on a frozen encoder runs ~100× faster
  // than M1, which then looked like zero), else linear from 0.
  double tp_lo = 0, tp_hi = 0;
  for (QCPGraph* g : {throughput_, stage_throughput_}) {
    bool has = false;
    const QCPRange r = g->data()->valueRange(has);
    if (!has) continue;
    tp_lo = tp_hi > 0 ? std::min(tp_lo, r.lower) : r.lower;
    tp_hi = std::max(tp_hi, r.upper);
  }
  QCPAxis* tp_y = throughput_rect_->axis(QCPAxis::atLeft);
  const bool log = tp_lo > 0 && tp_hi > 10 * tp_lo;
  if (log != (tp_y->scaleType() == QCPAxis::stLogarithmic)) {
    tp_y->setScaleType(log ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    tp_y->setTicker(log ? QSharedPointer<QCPAxisTicker>(new QCPAxisTickerLog) : QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    tp_y->ticker()->setTickCount(log ? 3 : 2);
    tp_y->setLabel(log ? tr("queries/s (log)") : tr("queries/s"));
  }
  if (log)
    tp_y->setRange(tp_lo / 1.5, tp_hi * 1.5);
  else
    tp_y->setRange(0, tp_hi > 0 ? tp_hi * 1.12 : 1);
  // System use from 0: memory to its top, CPU to at least one core.
  bool has_memory = false, has_cpu = false;
  const QCPRange memory = memory_->data()->valueRange(has_memory);
  const QCPRange cpu = cpu_->data()->valueRange(has_cpu);
  memory_->valueAxis()->setRange(0, has_memory && memory.upper > 0 ? memory.upper * 1.15 : 1);
  cpu_->valueAxis()->setRange(0, std::max(1.0, has_cpu ? cpu.upper * 1.15 : 1.0));
  rescaling_ = false;
}

}  // namespace xmc::gui
