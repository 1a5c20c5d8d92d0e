#pragma once
// A combo box that the mouse wheel changes only when it has focus: scrolling a long form over an unfocused
// one scrolls the form (a run was once started with pooling = cls because the wheel passed over that box).
#include <QComboBox>
#include <QWheelEvent>

namespace xmc::gui {

class FocusWheelComboBox : public QComboBox {
 public:
  explicit FocusWheelComboBox(QWidget* parent = nullptr) : QComboBox(parent) { setFocusPolicy(Qt::StrongFocus); }

 protected:
  void wheelEvent(QWheelEvent* event) override {
    if (!hasFocus()) {
      event->ignore();  // goes on to the scroll area around the form
      return;
    }
    QComboBox::wheelEvent(event);
  }
};

}  // namespace xmc::gui
