#include "widgets/search/thumbnails.h"

#include <QCache>
#include <QImageReader>

namespace xmc::gui {

QPixmap thumbnail(const QString& path, int side) {
  static QCache<QString, QPixmap> cache(400);
  const QString key = path + QLatin1Char('@') + QString::number(side);
  if (const QPixmap* kept = cache.object(key)) return *kept;
  QImageReader reader(path);
  reader.setAutoTransform(true);
  const QSize size = reader.size();
  if (size.isValid() && (size.width() > side || size.height() > side)) reader.setScaledSize(size.scaled(side, side, Qt::KeepAspectRatio));
  const QImage image = reader.read();
  auto* pixmap = new QPixmap(image.isNull() ? QPixmap() : QPixmap::fromImage(image.scaled(side, side, Qt::KeepAspectRatio, Qt::SmoothTransformation)));
  cache.insert(key, pixmap);
  return *pixmap;
}

}  // namespace xmc::gui
