#include "data/hf_hub.hpp"

#include "common/text.hpp"
#include "data/shallow_json.hpp"
#include "data/shard_list.hpp"
#include "stoke/error.hpp"

namespace stoke::detail {

HubPath parse_hub_path(const std::string& name) {
  const auto bad = [&](const std::string& why) {
    return ConfigError(name + ": " + why + " (expected hf://datasets/ORG/NAME[@REVISION][/PATH])");
  };
  std::string rest = name.substr(std::string("hf://").size());
  if (!rest.starts_with("datasets/")) throw bad("only dataset repositories are read");
  rest = rest.substr(std::string("datasets/").size());
  const std::size_t org_end = rest.find('/');
  if (org_end == std::string::npos || org_end == 0) throw bad("no ORG/NAME");
  const std::size_t name_end = rest.find('/', org_end + 1);
  std::string repo_name = rest.substr(org_end + 1, name_end - org_end - 1);
  HubPath at;
  if (const std::size_t rev = repo_name.find('@'); rev != std::string::npos) {
    at.revision = repo_name.substr(rev + 1);
    repo_name.resize(rev);
    if (at.revision.empty()) throw bad("an empty revision");
  }
  if (repo_name.empty()) throw bad("no NAME");
  at.repo = rest.substr(0, org_end) + "/" + repo_name;
  if (name_end != std::string::npos) at.path = rest.substr(name_end + 1);
  for (const std::string& part : {at.repo, at.revision, at.path})
    for (const char c : part)
      if (static_cast<unsigned char>(c) < 0x20 || c == ' ' || c == '?' || c == '#')
        throw bad("a character a URL cannot carry here");
  return at;
}

std::string hub_file_url(const HubPath& at, const std::string& path) {
  // A file's name may hold any byte ("train 1.parquet", '#', '?'): percent-encoded, '/' kept.
  return hf_endpoint() + "/datasets/" + at.repo + "/resolve/" + at.revision + "/" +
         percent_encoded_path(path);
}

std::vector<std::string> hub_listing(const HubPath& at, const std::string& folder,
                                     const RemotePolicy& policy) {
  const std::string endpoint = hf_endpoint();
  if (!endpoint.starts_with("http://") && !endpoint.starts_with("https://"))
    throw ConfigError("HF_ENDPOINT '" + redact_url(endpoint) +
                      "' is not an http:// or https:// URL (e.g. https://huggingface.co)");
  std::string url = endpoint + "/api/datasets/" + at.repo + "/tree/" + at.revision;
  if (!folder.empty()) url.append("/").append(percent_encoded_path(folder));
  url.append("?recursive=true");
  std::vector<std::string> files;
  for (int page = 0; !url.empty(); ++page) {
    if (page == kMaxHubListingPages)
      throw ConfigError(redact_url(url) + ": the listing goes on past " +
                        std::to_string(kMaxHubListingPages) + " pages");
    std::string body, next;
    if (!remote_get_if_exists(url, body, kMaxHubListingBytes, policy, &next))
      throw ConfigError(redact_url(url) + ": no such repository, revision or folder on the Hub" +
                        " (a private or gated one needs HF_TOKEN)");
    const nlohmann::json j = parse_shallow_json(body, 4);
    if (!j.is_array()) throw ConfigError(redact_url(url) + ": not the Hub's listing (a JSON array)");
    for (const nlohmann::json& entry : j) {
      if (!entry.is_object()) continue;
      const auto type = entry.find("type");
      const auto path = entry.find("path");
      if (type == entry.end() || path == entry.end() || !path->is_string() || *type != "file")
        continue;
      if (files.size() == kMaxShards)
        throw ConfigError(redact_url(url) + ": the listing holds more than " +
                          std::to_string(kMaxShards) + " files");
      files.push_back(path->get<std::string>());
    }
    // The next page is the endpoint's own: a listing does not send the loader (and its token or
    // S3 credentials) elsewhere, nor back to a page it read.
    if (!next.empty() && !(next.starts_with(endpoint + "/") && next != url))
      throw ConfigError(redact_url(url) + ": the listing's next page is not the endpoint's (" +
                        redact_url(next) + ")");
    url = next;
  }
  return files;
}

}  // namespace stoke::detail
