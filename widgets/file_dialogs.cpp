#include "widgets/file_dialogs.h"

#include <QAbstractFileIconProvider>
#include <QFileDialog>
#include <QFileInfo>

namespace xmc::gui {
namespace {

/// Icons and type names from the file name alone: nothing is read (the base class sniffs contents).
class NameOnlyIconProvider final : public QAbstractFileIconProvider {
 public:
  QIcon icon(IconType type) const override { return QAbstractFileIconProvider::icon(type); }
  QIcon icon(const QFileInfo& info) const override { return icon(info.isDir() ? Folder : File); }
  QString type(const QFileInfo& info) const override {
    if (info.isDir()) return QStringLiteral("Folder");
    return info.suffix().isEmpty() ? QStringLiteral("File") : info.suffix().toUpper() + QStringLiteral(" file");
  }
};

QString run_dialog(QWidget* parent, const QString& caption, const QString& dir, const QString& filter, QFileDialog::AcceptMode accept,
                   QFileDialog::FileMode mode) {
  static NameOnlyIconProvider provider;  // outlives every dialog
  QFileDialog dialog(parent, caption, dir, filter);
  dialog.setOption(QFileDialog::DontUseNativeDialog);
  dialog.setIconProvider(&provider);
  dialog.setAcceptMode(accept);
  dialog.setFileMode(mode);
  if (mode == QFileDialog::Directory) dialog.setOption(QFileDialog::ShowDirsOnly);
  if (dialog.exec() != QDialog::Accepted || dialog.selectedFiles().isEmpty()) return {};
  return dialog.selectedFiles().front();
}

}  // namespace

QString open_file_name(QWidget* parent, const QString& caption, const QString& dir, const QString& filter) {
  return run_dialog(parent, caption, dir, filter, QFileDialog::AcceptOpen, QFileDialog::ExistingFile);
}

QString save_file_name(QWidget* parent, const QString& caption, const QString& dir, const QString& filter) {
  return run_dialog(parent, caption, dir, filter, QFileDialog::AcceptSave, QFileDialog::AnyFile);
}

QString existing_directory(QWidget* parent, const QString& caption, const QString& dir) {
  return run_dialog(parent, caption, dir, {}, QFileDialog::AcceptOpen, QFileDialog::Directory);
}

}  // namespace xmc::gui
