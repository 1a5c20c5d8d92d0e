// Filter expressions over runs, on three hand-made runs: which pass each expression, the names they read (a former
// key name as today's), and the errors a user gets for what does not parse, each naming where and what.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "engine/records/run_filter.h"

namespace xmc {
namespace {

using Run = std::map<std::string, FilterValue>;

const std::vector<Run>& runs() {
  static const std::vector<Run> all{
      {{"id", 1.0}, {"method", std::string("unidec")}, {"lr", 0.003}, {"P@1", 0.62}, {"emb/P@5", 0.30}, {"dataset", std::string("data/Bibtex")},
       {"tags", std::string("baseline, seed-1")}, {"optim.grad_clip", 1.0}},
      {{"id", 2.0}, {"method", std::string("dexml")}, {"lr", 0.01}, {"P@1", 0.58}, {"dataset", std::string("data/wordnet")}, {"tags", std::string("")},
       {"optim.grad_clip", 0.0}},
      {{"id", 3.0}, {"method", std::string("unidec")}, {"lr", 0.0003}, {"dataset", std::string("data/bibtex")}, {"tags", std::string("sweep")}},  // never evaluated
  };
  return all;
}

/// The ids of the runs `expression` lets through.
std::vector<int> passing(const std::string& expression) {
  const RunFilter filter = RunFilter::parse(expression);
  std::vector<int> out;
  for (const Run& run : runs())
    if (filter.matches([&](const std::string& name, FilterNameKind) {
          const auto it = run.find(name);
          return it == run.end() ? FilterValue{} : it->second;
        }))
      out.push_back(static_cast<int>(std::get<double>(run.at("id"))));
  return out;
}

TEST(RunFilter, ComparesConfigKeysMetricsAndFieldsAsTheIssueWritesThem) {
  EXPECT_EQ(passing(R"(method == "unidec" and P@1 > 0.6)"), std::vector<int>({1}));
  EXPECT_EQ(passing("lr < 0.01"), std::vector<int>({1, 3}));
  EXPECT_EQ(passing("lr <= 0.01 and not (method == 'unidec')"), std::vector<int>({2}));
  EXPECT_EQ(passing("method == \"dexml\" or lr < 0.001"), std::vector<int>({2, 3}));
  // and binds tighter than or: 1 (unidec, P@1 .62) or 2 (dexml) — not 3.
  EXPECT_EQ(passing("method == 'dexml' or method == 'unidec' and P@1 > 0.6"), std::vector<int>({1, 2}));
  EXPECT_EQ(passing("(method == 'dexml' or method == 'unidec') and P@1 > 0.6"), std::vector<int>({1}));
  // Percentages read as fractions; a mode's metric by its prefix; text found in text whatever the case.
  EXPECT_EQ(passing("P@1 >= 60%"), std::vector<int>({1}));
  EXPECT_EQ(passing("emb/P@5 == 0.3"), std::vector<int>({1}));
  EXPECT_EQ(passing("\"bibtex\" in dataset"), std::vector<int>({1, 3}));
  EXPECT_EQ(passing("'seed' in tags or id >= 3"), std::vector<int>({1, 3}));
  // A run without the value fails every comparison with it, != included; not() of that passes.
  EXPECT_EQ(passing("P@1 != 0.58"), std::vector<int>({1}));
  EXPECT_EQ(passing("not P@1 > 0"), std::vector<int>({3}));
  // A former key name reads as today's.
  EXPECT_EQ(passing("grad_clip > 0"), std::vector<int>({1}));
  EXPECT_EQ(RunFilter::parse("grad_clip > 0 and lr < 1 and lr > 0").names(), std::vector<std::string>({"optim.grad_clip", "lr"}));
}

/// The message of the FilterError `expression` raises, and that it names `position`.
std::string refusal(const std::string& expression, std::size_t position) {
  try {
    RunFilter::parse(expression);
  } catch (const FilterError& e) {
    EXPECT_EQ(e.position(), position) << expression << ": " << e.what();
    return e.what();
  }
  ADD_FAILURE() << expression << " was accepted";
  return {};
}

TEST(RunFilter, WhatDoesNotParseIsNamedWithItsPlace) {
  EXPECT_NE(refusal("lrr < 0.1", 1).find("unknown name \"lrr\""), std::string::npos);
  EXPECT_NE(refusal("method == unidec", 11).find("unknown name \"unidec\""), std::string::npos);
  EXPECT_NE(refusal("method == 3", 11).find("compares a text with a number (put the value in quotes"), std::string::npos);
  EXPECT_NE(refusal("method < 'x'", 8).find("< compares numbers"), std::string::npos);
  EXPECT_NE(refusal("3 in tags", 3).find("in finds a text in a text"), std::string::npos);
  EXPECT_NE(refusal("P@1 > ", 7).find("found the end"), std::string::npos);
  EXPECT_NE(refusal("(lr < 1", 8).find("expected \")\" to close the \"(\" at character 1"), std::string::npos);
  EXPECT_NE(refusal("method == \"unidec", 11).find("no closing \""), std::string::npos);
  EXPECT_NE(refusal("lr < 0.1 lr > 0", 10).find("expected and, or or the end"), std::string::npos);
  EXPECT_NE(refusal("lr ~ 1", 4).find("unexpected \"~\""), std::string::npos);
  EXPECT_NE(refusal("lr < 1e", 6).find("is not a number"), std::string::npos);
  EXPECT_NE(refusal("lr", 3).find("expected a comparison"), std::string::npos);
  // Deep nesting is refused by name, not by the stack.
  EXPECT_NE(refusal(std::string(5000, '(') + "lr < 1" + std::string(5000, ')'), 202).find("nested"), std::string::npos);
  EXPECT_NE(refusal(std::string(300, 'n') + "", 1).find("unknown name"), std::string::npos);
}

TEST(RunFilter, WordsToFindAreToldApartFromExpressions) {
  EXPECT_FALSE(looks_like_filter_expression("bibtex"));
  EXPECT_FALSE(looks_like_filter_expression("training run"));
  EXPECT_FALSE(looks_like_filter_expression("sweep-1"));
  EXPECT_TRUE(looks_like_filter_expression("lr<0.1"));
  EXPECT_TRUE(looks_like_filter_expression("method == 'unidec'"));
  EXPECT_TRUE(looks_like_filter_expression("'base' in tags"));
  // Stored config values read by the key's kind.
  EXPECT_EQ(std::get<double>(filter_value_from_text(filter_name_kind("lr"), "0.003")), 0.003);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(filter_value_from_text(filter_name_kind("lr"), "fast")));
  EXPECT_EQ(std::get<std::string>(filter_value_from_text(filter_name_kind("encoder.type"), "bow")), "bow");
  EXPECT_EQ(filter_name_kind("PSnDCG@10"), FilterNameKind::number);
  EXPECT_EQ(filter_name_kind("P@"), FilterNameKind::unknown);
}

}  // namespace
}  // namespace xmc
