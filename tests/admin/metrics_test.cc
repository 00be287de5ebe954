#include "admin/metrics.h"

#include <gtest/gtest.h>

#include <thread>

namespace rdmastor::admin {
namespace {

TEST(MetricsFormat, EscapesLabelValues) {
  EXPECT_EQ(EscapeLabelValue(R"(a"b\c)"), R"(a\"b\\c)");
  EXPECT_EQ(EscapeLabelValue("line1\nline2"), "line1\\nline2");
  EXPECT_EQ(EscapeLabelValue("/mnt/drive1"), "/mnt/drive1");
}

TEST(MetricsFormat, FormatsValues) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(42), "42");
  EXPECT_EQ(FormatSampleValue(1099511627776.0), "1099511627776");
  EXPECT_EQ(FormatSampleValue(0.5), "0.5");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
}

TEST(MetricsRegistry, RendersTextExposition) {
  Registry r;
  auto& c = r.AddCounter("t_requests_total", "Requests\nby api", {"api", "code"});
  auto& g = r.AddGauge("t_free_bytes", "Free bytes", {}, Scope::kNode);
  c.With({"PutObject", "200"}).Inc(3);
  c.With({"Get\"Obj", "404"}).Inc();
  g.With().Set(7);
  EXPECT_EQ(r.Render(Scope::kNode),
            "# HELP t_requests_total Requests\\nby api\n"
            "# TYPE t_requests_total counter\n"
            "t_requests_total{api=\"Get\\\"Obj\",code=\"404\"} 1\n"
            "t_requests_total{api=\"PutObject\",code=\"200\"} 3\n"
            "# HELP t_free_bytes Free bytes\n"
            "# TYPE t_free_bytes gauge\n"
            "t_free_bytes 7\n");
  // Node-only families stay off the cluster endpoint.
  EXPECT_EQ(r.Render(Scope::kCluster).find("t_free_bytes"), std::string::npos);
}

TEST(MetricsRegistry, RendersHistogramsCumulatively) {
  Registry r;
  auto& h = r.AddHistogram("t_seconds", "Latency", {"api"});
  h.With({"GetObject"}).Observe(0.0005);  // first bucket
  h.With({"GetObject"}).Observe(0.003);   // le 0.005
  h.With({"GetObject"}).Observe(60);      // above every bound: +Inf only
  const std::string text = r.Render(Scope::kCluster);
  EXPECT_NE(text.find("# TYPE t_seconds histogram\n"), std::string::npos) << text;
  for (const char* line :
       {"t_seconds_bucket{api=\"GetObject\",le=\"0.001\"} 1\n",
        "t_seconds_bucket{api=\"GetObject\",le=\"0.0025\"} 1\n",
        "t_seconds_bucket{api=\"GetObject\",le=\"0.005\"} 2\n",
        "t_seconds_bucket{api=\"GetObject\",le=\"10\"} 2\n",
        "t_seconds_bucket{api=\"GetObject\",le=\"+Inf\"} 3\n", "t_seconds_count{api=\"GetObject\"} 3\n",
        "t_seconds_sum{api=\"GetObject\"} 60.0035"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  // Bucket-scoped families stay off the cluster and node endpoints.
  r.AddGauge("t_bucket_bytes", "bytes", {"bucket"}, Scope::kBucket).With({"b"}).Set(1);
  EXPECT_EQ(r.Render(Scope::kCluster).find("t_bucket_bytes"), std::string::npos);
  EXPECT_EQ(r.Render(Scope::kNode).find("t_bucket_bytes"), std::string::npos);
  EXPECT_NE(r.Render(Scope::kBucket).find("t_bucket_bytes{bucket=\"b\"} 1\n"), std::string::npos);
}

TEST(MetricsRegistry, LabelLessFamiliesShowZero) {
  Registry r;
  r.AddCounter("t_zero_total", "zero", {});
  EXPECT_NE(r.Render(Scope::kCluster).find("\nt_zero_total 0\n"), std::string::npos);
}

TEST(MetricsRegistry, ScrapeHooksRunBeforeRender) {
  Registry r;
  auto& g = r.AddGauge("t_sampled", "sampled", {});
  int calls = 0;
  r.AddScrapeHook([&] { g.With().Set(++calls); });
  EXPECT_NE(r.Render(Scope::kCluster).find("t_sampled 1\n"), std::string::npos);
  EXPECT_NE(r.Render(Scope::kCluster).find("t_sampled 2\n"), std::string::npos);
}

TEST(MetricsRegistry, ConcurrentIncrementsAreExact) {
  Registry r;
  auto& c = r.AddCounter("t_concurrent_total", "c", {"api"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) c.With({i % 2 ? "A" : "B"}).Inc();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c.With({"A"}).value() + c.With({"B"}).value(), 40000u);
}

TEST(ServerMetrics, FamiliesPresentWithZeros) {
  std::string text = GlobalRegistry().Render(Scope::kCluster);
  EXPECT_NE(text.find("minio_s3_traffic_received_bytes{transport=\"rdma\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("minio_api_rdma_replies_total{code=\"501\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("minio_system_network_internode_sent_bytes_total{transport=\"tcp\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE minio_s3_requests_total counter\n"), std::string::npos);
}

TEST(ServerMetrics, RecordsRequestsByStatusClass) {
  RecordS3Request("UnitTestApi", 200, false);
  RecordS3Request("UnitTestApi", 404, false);
  RecordS3Request("UnitTestApi", 503, true);
  std::string text = GlobalRegistry().Render(Scope::kCluster);
  EXPECT_NE(text.find("minio_s3_requests_total{api=\"UnitTestApi\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("minio_s3_requests_errors_total{api=\"UnitTestApi\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("minio_s3_requests_4xx_errors_total{api=\"UnitTestApi\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("minio_s3_requests_5xx_errors_total{api=\"UnitTestApi\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("minio_s3_requests_canceled_total{api=\"UnitTestApi\"} 1\n"),
            std::string::npos);
}

// Origin declines are a count that only grows: a counter, brought up to the service's total at
// each scrape and never down (issue 33, item 13).
TEST(ServerMetrics, RdmaOriginDeclinesAreACounter) {
  SetRdmaOriginDeclines(3);
  SetRdmaOriginDeclines(2);  // an older sample never lowers it
  std::string text = GlobalRegistry().Render(Scope::kCluster);
  EXPECT_NE(text.find("# TYPE rdmastor_rdma_declined_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("rdmastor_rdma_declined_total{reason=\"origin\"} 3\n"), std::string::npos);
  EXPECT_EQ(text.find("rdmastor_rdma_declined{"), std::string::npos);
  SetRdmaOriginDeclines(5);
  text = GlobalRegistry().Render(Scope::kCluster);
  EXPECT_NE(text.find("rdmastor_rdma_declined_total{reason=\"origin\"} 5\n"), std::string::npos);
}

TEST(ServerMetrics, HealProgressHook) {
  HealProgress p;
  p.running = true;
  p.objects_scanned = 10;
  p.objects_healed = 4;
  p.objects_failed = 1;
  SetHealProgress(p);
  std::string text = GlobalRegistry().Render(Scope::kNode);
  EXPECT_NE(text.find("rdmastor_heal_running 1\n"), std::string::npos);
  EXPECT_NE(text.find("minio_heal_objects_total 10\n"), std::string::npos);
  EXPECT_NE(text.find("minio_heal_objects_heal_total 4\n"), std::string::npos);
  EXPECT_NE(text.find("minio_heal_objects_errors_total 1\n"), std::string::npos);
  EXPECT_EQ(GlobalRegistry().Render(Scope::kCluster).find("minio_heal_"), std::string::npos);
}

TEST(ServerMetrics, HealTotalsAreCountersThatNeverGoBack) {
  auto value = [](const std::string& name) {
    std::string text = GlobalRegistry().Render(Scope::kNode);
    auto pos = text.find("\n" + name + " ");
    if (pos == std::string::npos) return -1.0;
    return std::stod(text.substr(pos + name.size() + 2));
  };
  HealProgress p;
  p.shards_written = 6;
  p.queue_size = 3;
  p.total_objects_healed = 5;
  p.total_shards_written = 12;
  p.drives_replaced = 2;
  SetHealProgress(p);
  EXPECT_EQ(value("rdmastor_heal_shards_written_total"), 6);
  EXPECT_EQ(value("rdmastor_heal_queue_size"), 3);
  EXPECT_EQ(value("rdmastor_healed_objects_total"), 5);
  EXPECT_EQ(value("rdmastor_healed_shards_total"), 12);
  EXPECT_EQ(value("rdmastor_drives_replaced_total"), 2);
  std::string text = GlobalRegistry().Render(Scope::kNode);
  EXPECT_NE(text.find("# TYPE rdmastor_healed_shards_total counter"), std::string::npos);
  p.total_shards_written = 20;
  SetHealProgress(p);
  EXPECT_EQ(value("rdmastor_healed_shards_total"), 20);
  p.total_shards_written = 4;  // totals only grow: a smaller sample changes nothing
  SetHealProgress(p);
  EXPECT_EQ(value("rdmastor_healed_shards_total"), 20);
}

}  // namespace
}  // namespace rdmastor::admin
