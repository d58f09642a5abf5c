#include "core/data/builtin_corpus.h"

#include <array>
#include <span>
#include <string_view>

#include "core/util/check.h"

namespace strata {
namespace {

// splitmix64: tiny, fully specified, the same on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform-enough index in [0, n) (modulo bias is ~n/2^64, irrelevant here).
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  bool chance(int percent) { return below(100) < static_cast<size_t>(percent); }
  template <typename T, size_t N>
  const T& pick(const std::array<T, N>& items) {
    return items[below(N)];
  }

 private:
  uint64_t state_;
};

struct Character {
  std::string_view name;
  std::string_view kind;  // "girl", "cat", ...
  bool female;
};

constexpr std::array<Character, 24> kCharacters = {{
    {"Lily", "girl", true},  {"Tom", "boy", false},   {"Mia", "girl", true},
    {"Ben", "boy", false},   {"Sara", "girl", true},  {"Max", "dog", false},
    {"Lucy", "cat", true},   {"Sam", "boy", false},   {"Anna", "girl", true},
    {"Jack", "boy", false},  {"Zoe", "bird", true},   {"Leo", "lion", false},
    {"Emma", "girl", true},  {"Finn", "fox", false},  {"Rosa", "rabbit", true},
    {"Bob", "bear", false},  {"Ella", "duck", true},  {"Tim", "frog", false},
    {"Nina", "mouse", true}, {"Oscar", "owl", false}, {"Kate", "girl", true},
    {"Pip", "puppy", false}, {"Daisy", "cow", true},  {"Hugo", "turtle", false},
}};

constexpr std::array<std::string_view, 14> kTraits = {
    "little", "kind",   "happy",    "curious", "brave", "shy",  "funny",
    "small",  "clever", "friendly", "sleepy",  "quiet", "busy", "young"};

constexpr std::array<std::string_view, 16> kPlaces = {
    "park",   "forest",  "garden", "beach",  "river", "farm",   "town", "hill",
    "school", "kitchen", "lake",   "market", "zoo",   "meadow", "cave", "library"};

constexpr std::array<std::string_view, 10> kHomes = {
    "in a small house near the woods", "in a big house by the sea",
    "on a farm with many animals",     "in a red house on a hill",
    "in a tree near the river",        "in a busy town",
    "in a cozy hole under a tree",     "next to a little shop",
    "in a blue house with a garden",   "in a quiet village"};

constexpr std::array<std::string_view, 22> kObjects = {
    "ball",  "box",  "kite", "hat",     "book",  "cake", "toy car", "flower",
    "shell", "key",  "boat", "stone",   "apple", "drum", "map",     "balloon",
    "cup",   "bell", "sock", "feather", "star",  "leaf"};

constexpr std::array<std::string_view, 10> kColors = {"red",   "blue", "green", "yellow", "big",
                                                      "shiny", "pink", "tiny",  "old",    "new"};

constexpr std::array<std::string_view, 14> kActivities = {"play outside",
                                                          "read books",
                                                          "sing songs",
                                                          "draw pictures",
                                                          "run in the grass",
                                                          "climb trees",
                                                          "bake cookies",
                                                          "swim",
                                                          "dance",
                                                          "look at the stars",
                                                          "build towers",
                                                          "pick flowers",
                                                          "jump in puddles",
                                                          "help mom"};

constexpr std::array<std::string_view, 8> kSpots = {
    "under a big tree", "next to a rock",  "behind the door",   "in the sand",
    "near the water",   "on a high shelf", "in the tall grass", "under the bed"};

// How a hero feels when something goes wrong.
constexpr std::array<std::string_view, 7> kFeelings = {"sad",       "scared", "upset", "worried",
                                                       "surprised", "angry",  "sorry"};

constexpr std::array<std::string_view, 8> kMorals = {
    "sharing makes everyone happy", "it is good to help friends",    "being brave is not so hard",
    "you should always say sorry",  "friends make every day better", "it is fun to try new things",
    "being kind is the best thing", "you should never give up"};

constexpr std::array<std::string_view, 6> kTimes = {
    "One day", "One morning", "One sunny day", "One evening", "Later that week", "The next day"};

constexpr std::array<std::string_view, 6> kWeather = {
    "It was a sunny day.", "The sky was blue.",   "The wind was cold.",
    "It was very warm.",   "It started to rain.", "The sun was going down."};

// Everything one story refers to more than once.
struct Cast {
  const Character* hero;
  const Character* friend_;
  std::string_view trait;
  std::string_view place;
  std::string_view object;
  std::string_view color;
  std::string_view feeling;
};

std::string_view Subject(const Character& c) { return c.female ? "she" : "he"; }
std::string_view SubjectCap(const Character& c) { return c.female ? "She" : "He"; }
std::string_view Possessive(const Character& c) { return c.female ? "her" : "his"; }
std::string_view Object(const Character& c) { return c.female ? "her" : "him"; }

std::string_view Article(std::string_view word) {
  switch (word.empty() ? ' ' : word.front()) {
    case 'a':
    case 'e':
    case 'i':
    case 'o':
    case 'u':
      return "an";
    default:
      return "a";
  }
}

// Appends the cast's word for `key` ({N} {F} {he} {He} {his} {His} {him} {fhe} {fHe} {kind}
// {fkind} {a_trait} {place} {obj} {color} {a_color} {feel}); false when the key is not one of
// these.
bool AppendCastWord(std::string_view key, const Cast& cast, std::string& out) {
  const Character& h = *cast.hero;
  const Character& f = *cast.friend_;
  if (key == "N")
    out += h.name;
  else if (key == "F")
    out += f.name;
  else if (key == "he")
    out += Subject(h);
  else if (key == "He")
    out += SubjectCap(h);
  else if (key == "his")
    out += Possessive(h);
  else if (key == "His")
    out += h.female ? "Her" : "His";
  else if (key == "him")
    out += Object(h);
  else if (key == "fhe")
    out += Subject(f);
  else if (key == "fHe")
    out += SubjectCap(f);
  else if (key == "kind")
    out += h.kind;
  else if (key == "fkind")
    out += f.kind;
  else if (key == "a_trait") {
    out += Article(cast.trait);
    out += ' ';
    out += cast.trait;
  } else if (key == "place")
    out += cast.place;
  else if (key == "obj")
    out += cast.object;
  else if (key == "color")
    out += cast.color;
  else if (key == "a_color") {
    out += Article(cast.color);
    out += ' ';
    out += cast.color;
  } else if (key == "feel")
    out += cast.feeling;
  else
    return false;
  return true;
}

// Appends a fresh pick for `key` ({act} {spot} {other} {moral} {home} {time} {weather}); false
// when the key is not one of these.
bool AppendFreshWord(std::string_view key, Rng& rng, std::string& out) {
  if (key == "act")
    out += rng.pick(kActivities);
  else if (key == "spot")
    out += rng.pick(kSpots);
  else if (key == "other")
    out += rng.pick(kObjects);
  else if (key == "moral")
    out += rng.pick(kMorals);
  else if (key == "home")
    out += rng.pick(kHomes);
  else if (key == "time")
    out += rng.pick(kTimes);
  else if (key == "weather")
    out += rng.pick(kWeather);
  else
    return false;
  return true;
}

// Expands a template. Keys: {N} hero name, {F} friend name, {he} {He} {his} {him} hero
// pronouns ({His} capitalised), {fhe} {fHe} friend pronouns, {kind} {fkind}, {a_trait} ("a
// little"), {place}, {obj}, {color}, {a_color}, {feel}, {act} (a fresh activity), {spot}, {other}
// (a fresh object), {moral}.
void Expand(std::string_view tmpl, const Cast& cast, Rng& rng, std::string& out) {
  size_t i = 0;
  while (i < tmpl.size()) {
    if (tmpl[i] != '{') {
      out.push_back(tmpl[i++]);
      continue;
    }
    const size_t close = tmpl.find('}', i);
    STRATA_CHECK(close != std::string_view::npos) << "unterminated key in template " << tmpl;
    const std::string_view key = tmpl.substr(i + 1, close - i - 1);
    i = close + 1;
    if (!AppendCastWord(key, cast, out) && !AppendFreshWord(key, rng, out)) {
      STRATA_CHECK(false) << "unknown key {" << key << "} in template " << tmpl;
    }
  }
}

// One sentence (or short exchange) per template; each story picks one template per part.
constexpr std::array<std::string_view, 4> kOpenings = {
    "Once upon a time, there was {a_trait} {kind} named {N}. {He} lived {home}.",
    "{N} was {a_trait} {kind} who lived {home}.",
    "There once was {a_trait} {kind}. {His} name was {N}, and {he} lived {home}.",
    "In a land far away lived {a_trait} {kind} called {N}.",
};
constexpr std::array<std::string_view, 4> kLikes = {
    "{N} loved to {act}.",
    "Every day, {N} liked to {act} with {his} friend {F} the {fkind}.",
    "{He} liked to {act}, but most of all {he} liked to {act}.",
    "{N} had a friend, {F}. They liked to {act} together.",
};
constexpr std::array<std::string_view, 5> kFinds = {
    "{time}, {N} went to the {place}. {weather} There {he} found {a_color} {obj} {spot}.",
    "{time}, {N} and {F} walked to the {place}. They saw {a_color} {obj} {spot}.",
    "{time}, {N} was at the {place} when {he} saw {a_color} {obj}.",
    "{time}, {F} gave {N} {a_color} {obj}. \"This is for you,\" said {F}.",
    "{time}, {N} lost {his} {color} {obj} at the {place}. {He} looked {spot}, but it was not "
    "there.",
};
constexpr std::array<std::string_view, 5> kProblems = {
    "But {F} wanted the {obj} too. \"It is mine!\" said {F}. {N} felt {feel}.",
    "Then the {obj} fell into the water. {N} was {feel}.",
    "But the {obj} was stuck {spot}. {N} could not reach it.",
    "Suddenly, a big dog ran to the {place} and took the {obj}. {N} was very {feel}.",
    "{N} did not know what to do with the {obj}. {He} asked {F} for help.",
};
constexpr std::array<std::string_view, 5> kTurns = {
    "\"Let us share it,\" said {N}. {F} smiled and said, \"Yes, let us share!\"",
    "{F} came to help. Together they got the {obj} back.",
    "{N} thought for a while. Then {he} had an idea. {He} used {his} {other} to get the {obj}.",
    "\"Do not be {feel},\" said {F}. \"I will help you.\" And {fhe} did.",
    "{N} said sorry to {F}, and {F} said sorry too. They were friends again.",
};
constexpr std::array<std::string_view, 5> kEndings = {
    "They played with the {obj} all day. {N} was very happy. The end.",
    "{N} learned that {moral}. The end.",
    "From that day on, {N} and {F} went to the {place} every day to {act}.",
    "{N} took the {obj} home and put it next to {his} {other}. {He} smiled and went to sleep.",
    "That night, {N} told {his} mom about the {obj}. \"You did well,\" she said. The end.",
};

void AppendStory(Rng& rng, std::string& out) {
  Cast cast;
  cast.hero = &rng.pick(kCharacters);
  do {
    cast.friend_ = &rng.pick(kCharacters);
  } while (cast.friend_ == cast.hero);
  cast.trait = rng.pick(kTraits);
  cast.place = rng.pick(kPlaces);
  cast.object = rng.pick(kObjects);
  cast.color = rng.pick(kColors);
  cast.feeling = rng.pick(kFeelings);

  auto part = [&](std::span<const std::string_view> options) {
    if (!out.empty() && out.back() != '\n') out.push_back(' ');
    Expand(options[rng.below(options.size())], cast, rng, out);
  };
  part(kOpenings);
  if (rng.chance(80)) part(kLikes);
  part(kFinds);
  out.push_back('\n');
  part(kProblems);
  const size_t turn = rng.below(kTurns.size());
  out.push_back(' ');
  Expand(kTurns[turn], cast, rng, out);
  if (rng.chance(30)) {  // a second, different turn of events
    out.push_back(' ');
    Expand(kTurns[(turn + 1 + rng.below(kTurns.size() - 1)) % kTurns.size()], cast, rng, out);
  }
  out.push_back('\n');
  part(kEndings);
  out += "\n\n";
}

}  // namespace

std::string GenerateBuiltinCorpus(size_t bytes, uint64_t seed) {
  Rng rng(seed);
  std::string text;
  text.reserve(bytes + 1024);
  while (text.size() < bytes) AppendStory(rng, text);
  text.resize(bytes);
  return text;
}

TokenDataset BuiltinCorpusDataset(size_t bytes, uint64_t seed) {
  return TokenDataset::FromText(GenerateBuiltinCorpus(bytes, seed), kBuiltinCorpusName);
}

}  // namespace strata
