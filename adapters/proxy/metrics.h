// The proxy's Prometheus endpoint: the text exposition of its counters
// (MetricsText) and the answer of the tiny HTTP/1.0 server that serves it on
// `metrics_port` (the event loop owns the sockets and calls these).
//
//   std::string text = metrics::MetricsText(stats, /*clients=*/3);
//   if (metrics::HttpRequestComplete(buf, /*eof=*/false))
//     reply = metrics::HttpResponse(buf, [&] { return text; });
//
// Thread safety: stateless functions; MetricsText reads atomics only, so it
// may run on any thread while the loop counts.
#ifndef CORRAL_ADAPTERS_PROXY_METRICS_H_
#define CORRAL_ADAPTERS_PROXY_METRICS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/strings/string_view.h"
#include "adapters/proxy/stats.h"

namespace corral {
namespace proxy {
namespace metrics {

// Prometheus text format (version 0.0.4) of `stats` plus the client gauge.
std::string MetricsText(const Stats& stats, int64_t clients);

// A request is answered once its header ended, the peer closed, or it grew
// past 8 KiB.
bool HttpRequestComplete(absl::string_view request, bool eof);

// "GET /metrics..." gets 200 with metrics(); anything else 404. The whole
// response, Connection: close.
std::string HttpResponse(absl::string_view request, const std::function<std::string()>& metrics);

}  // namespace metrics
}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_METRICS_H_
