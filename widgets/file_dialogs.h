#pragma once
// File dialogs that never open the files they list. Qt's file dialogs (and the desktop's native ones) look
// inside files to pick icons and type names; opening and closing a run store that way drops every POSIX
// lock SQLite holds on it in this process (locks belong to the process and file, not to a descriptor), and
// a command-line run that exits then deletes the store's -wal and -shm files under the open workbench. Every
// dialog of the workbench goes through these, which use Qt's own dialog with an icon provider that only
// looks at names.
#include <QString>

class QWidget;

namespace xmc::gui {

QString open_file_name(QWidget* parent, const QString& caption, const QString& dir = {}, const QString& filter = {});
QString save_file_name(QWidget* parent, const QString& caption, const QString& dir = {}, const QString& filter = {});
QString existing_directory(QWidget* parent, const QString& caption, const QString& dir = {});

}  // namespace xmc::gui
