// Optimization report: per-pass node counts, fusion groups with the source nodes each kernel
// computes, the op histogram before and after, and after every pass.
#include "report.h"

#include <nlohmann/json.hpp>

namespace kiln::cli {
namespace {

using json = nlohmann::ordered_json;

std::string escapeHtml(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

json buildJson(const Model& model, int64_t nodesBefore, const std::map<std::string, int64_t>& opsBefore,
               const std::vector<PassRecord>& passes) {
  json j;
  j["nodes_before"] = nodesBefore;
  j["nodes_after"] = nodesWithBodies(*model.graph);
  json p = json::array();
  for (const PassRecord& r : passes) {
    json patterns = json::object();
    for (const auto& [k, v] : r.stats.patterns) patterns[k] = v;
    p.push_back({{"pass", r.pass},
                 {"nodes_before", r.nodesBefore},
                 {"nodes_after", r.nodesAfter},
                 {"added", r.stats.nodesAdded},
                 {"removed", r.stats.nodesRemoved},
                 {"fused", r.stats.nodesFused},
                 {"milliseconds", r.milliseconds},
                 {"patterns", patterns},
                 {"ops_after", r.opsAfter}});
  }
  j["passes"] = p;
  json groups = json::array();
  for (const auto& n : model.graph->nodes()) {
    const auto& src = n->annotations().sources;
    if (src.size() < 2 && n->domain().empty()) continue;
    groups.push_back({{"node", n->name()},
                      {"op", n->domain().empty() ? n->opType() : n->domain() + "." + n->opType()},
                      {"sources", src}});
  }
  j["fusion_groups"] = groups;
  j["ops_before"] = opsBefore;
  j["ops_after"] = opHistogram(*model.graph);
  return j;
}

/// The op histogram after every pass: one row per op, one column per pass; a count that the
/// pass changed is bold.
std::string perPassHistogram(const json& j) {
  std::map<std::string, std::vector<int64_t>> rows;  // op -> count before, after each pass
  const size_t columns = j["passes"].size() + 1;
  auto put = [&](const json& histogram, size_t column) {
    for (const auto& [op, n] : histogram.items()) {
      auto& row = rows[op];
      row.resize(columns, 0);
      row[column] = n.get<int64_t>();
    }
  };
  put(j["ops_before"], 0);
  for (size_t i = 0; i < j["passes"].size(); ++i) put(j["passes"][i]["ops_after"], i + 1);
  std::string out =
      "<h2>Op histogram per pass</h2><table><tr><th class=l>op</th><th>before</th>";
  for (const json& p : j["passes"])
    out += "<th>" + escapeHtml(p["pass"].get<std::string>()) + "</th>";
  out += "</tr>";
  for (auto& [op, counts] : rows) {
    counts.resize(columns, 0);
    out += "<tr><td class=l>" + escapeHtml(op) + "</td>";
    for (size_t c = 0; c < columns; ++c) {
      bool changed = c > 0 && counts[c] != counts[c - 1];
      std::string cell = counts[c] == 0 ? "" : std::to_string(counts[c]);
      if (changed && cell.empty()) cell = "0";
      out += changed ? "<td><b>" + cell + "</b></td>" : "<td>" + cell + "</td>";
    }
    out += "</tr>";
  }
  return out + "</table>";
}

std::string html(const json& j) {
  std::string out =
      "<!doctype html><html><head><meta charset=\"utf-8\"><title>kiln optimization report</title>"
      "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
      "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td.l,th.l{text-align:left}"
      "</style></head><body><h1>kiln optimization report</h1>";
  out += fmt::format("<p>{} nodes before the passes, {} after.</p>", j["nodes_before"].get<int64_t>(),
                     j["nodes_after"].get<int64_t>());
  out += "<h2>Passes</h2><table><tr><th class=l>pass</th><th>nodes</th><th>after</th><th>added</th>"
         "<th>removed</th><th>fused</th><th>ms</th><th class=l>patterns</th></tr>";
  for (const json& p : j["passes"]) {
    std::string pats;
    for (const auto& [k, v] : p["patterns"].items())
      pats += escapeHtml(k) + " ×" + std::to_string(v.get<int64_t>()) + "<br>";
    out += fmt::format(
        "<tr><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{:.2f}</td><td class=l>{}</td></tr>",
        escapeHtml(p["pass"].get<std::string>()), p["nodes_before"].get<int64_t>(),
        p["nodes_after"].get<int64_t>(), p["added"].get<int64_t>(), p["removed"].get<int64_t>(),
        p["fused"].get<int64_t>(), p["milliseconds"].get<double>(), pats);
  }
  out += "</table><h2>Fusion groups</h2><table><tr><th class=l>node</th><th class=l>op</th>"
         "<th class=l>source nodes</th></tr>";
  for (const json& g : j["fusion_groups"]) {
    std::string src;
    for (const json& s : g["sources"]) src += (src.empty() ? "" : ", ") + escapeHtml(s.get<std::string>());
    out += fmt::format("<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td></tr>",
                       escapeHtml(g["node"].get<std::string>()),
                       escapeHtml(g["op"].get<std::string>()), src);
  }
  out += "</table><h2>Op histogram</h2><table><tr><th class=l>op</th><th>before</th><th>after</th></tr>";
  std::map<std::string, std::pair<int64_t, int64_t>> ops;
  for (const auto& [k, v] : j["ops_before"].items()) ops[k].first = v.get<int64_t>();
  for (const auto& [k, v] : j["ops_after"].items()) ops[k].second = v.get<int64_t>();
  for (const auto& [k, v] : ops)
    out += fmt::format("<tr><td class=l>{}</td><td>{}</td><td>{}</td></tr>", escapeHtml(k), v.first,
                       v.second);
  out += "</table>" + perPassHistogram(j) + "</body></html>\n";
  return out;
}

}  // namespace

std::string optimizationReport(const Model& model, int64_t nodesBefore,
                               const std::map<std::string, int64_t>& opsBefore,
                               const std::vector<PassRecord>& passes, const std::string& path) {
  json j = buildJson(model, nodesBefore, opsBefore, passes);
  bool asHtml = path.size() >= 5 && path.substr(path.size() - 5) == ".html";
  return asHtml ? html(j) : j.dump(2) + "\n";
}

}  // namespace kiln::cli
