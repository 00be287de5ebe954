// systemd integration for `Type=notify` units (systemd/rdmastor.service), through libsystemd's
// sd_notify: READY=1 once the S3 port listens (so `systemctl start` returns when clients can
// connect), STATUS= lines, STOPPING=1, and the watchdog (WatchdogSec=). Outside systemd
// (NOTIFY_SOCKET unset) every call does nothing.
#pragma once

#include <cstdint>
#include <string>

namespace rdmastor::cli {

// Starts the watchdog thread when the service manager asked for one (WATCHDOG_USEC): it sends
// WATCHDOG=1 at a third of the interval. Until NotifyServing, while the server starts, every
// tick pings; afterwards a tick pings only when GET /minio/health/live on the loopback port
// answers 200 (over TLS when `tls`), so a server whose request loop hangs is restarted.
void StartWatchdog();

// READY=1 with a STATUS= line; the watchdog starts probing the listening address (`listen_host`
// "" or a wildcard: loopback).
void NotifyServing(const std::string& listen_host, uint16_t port, bool tls,
                   const std::string& status);
void NotifyStatus(const std::string& status);
void NotifyStopping();

}  // namespace rdmastor::cli
