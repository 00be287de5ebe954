// What every rdmastor command line (rdmastor, rdmastor-cli, the bench tools) does the same way on
// top of CLI11: a help page that starts with the program's own usage lines, and one sentence for a
// usage error that names the argument that was wrong. Include only in the few files that parse
// argv: CLI11 is header-only and costs seconds of compile time per file.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace rdmastor::cli11 {

// A help page: the usage lines `usage(app)` returns (the program's own, kept beside its other
// texts), then CLI11's description, arguments, flags, subcommands and footer.
class UsageFirstFormatter final : public CLI::Formatter {
 public:
  explicit UsageFirstFormatter(std::function<std::string(const CLI::App*)> usage)
      : usage_(std::move(usage)) {}
  std::string make_usage(const CLI::App* app, std::string) const override { return usage_(app); }
  std::string make_help(const CLI::App* app, std::string name,
                        CLI::AppFormatMode mode) const override {
    if (mode == CLI::AppFormatMode::Sub) return make_expanded(app);
    const std::string description = make_description(app), footer = make_footer(app);
    return make_usage(app, name) + (description.empty() ? "" : "\n" + description) +
           make_positionals(app) + make_groups(app, mode) + make_subcommands(app, mode) +
           (footer.empty() ? "" : "\n" + footer);
  }
  // An argument's line names it only: whether it is required or repeats is in the usage lines.
  std::string make_option_opts(const CLI::Option* opt) const override {
    return opt->get_positional() ? std::string() : CLI::Formatter::make_option_opts(opt);
  }

 private:
  std::function<std::string(const CLI::App*)> usage_;
};

// The command the parse got to: the last subcommand chosen at each level below `app`.
inline const CLI::App* Deepest(const CLI::App* app) {
  for (auto subs = app->get_subcommands(); !subs.empty(); subs = app->get_subcommands())
    app = subs.back();
  return app;
}

// One sentence for a usage error, naming what was wrong: an argument nobody took (a flag, a word
// where a command was expected, a word too many), a flag without its value, a missing argument.
// `at` is Deepest(root) after the failed parse.
inline std::string Explain(const CLI::ParseError& e, const CLI::App* at) {
  // Arguments no command took sit with the command they were met in (or the one they fell
  // through to); they are named before anything else was missing.
  for (const CLI::App* app = at; app; app = app->get_parent()) {
    const auto extra = app->remaining();
    if (extra.empty()) continue;
    const std::string& x = extra.front();
    if (x.size() > 1 && x[0] == '-') return "unknown argument '" + x + "'";
    if (app == at && !app->get_subcommands({}).empty()) return "unknown command '" + x + "'";
    return "unexpected argument '" + x + "'";
  }
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e)) {
    // CLI11's "--address: 1 required HOST:PORT missing".
    const auto colon = what.find(':');
    if (colon != std::string::npos && what.ends_with(" missing"))
      return what.substr(0, colon) + " needs a value";
  }
  if (dynamic_cast<const CLI::RequiredError*>(&e) && what == "A subcommand is required")
    return "which command? (none given)";
  return what;
}

// Parses a tool's command line (the bench tools): `--help` prints CLI11's help on stdout and exits
// 0 (a tool's help needs nothing else); a usage error comes back as one sentence (Explain).
inline std::optional<std::string> ParseOrHelp(CLI::App& app, int argc, const char* const* argv) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    std::exit(0);
  } catch (const CLI::ParseError& e) {
    return Explain(e, Deepest(&app));
  }
}

// The same, printing a usage error as "<tool>: <why>" and where the help is: the exit status 2
// then, nullopt when parsing succeeded.
inline std::optional<int> ParseOrExit(CLI::App& app, int argc, const char* const* argv) {
  auto why = ParseOrHelp(app, argc, argv);
  if (!why) return std::nullopt;
  std::fprintf(stderr, "%s: %s\n(%s --help for every flag)\n", app.get_name().c_str(),
               why->c_str(), app.get_name().c_str());
  return 2;
}

}  // namespace rdmastor::cli11
