/* SPDX-License-Identifier: BSD-3-Clause */
// A small strict JSON parser for tests: enough to prove that a report line is
// valid JSON and to look values up by key. Not for production use.
#ifndef SLIM_TESTS_JSON_CHECK_H
#define SLIM_TESTS_JSON_CHECK_H

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace slim_test {

struct Json {
    enum class Type { null, boolean, number, string, array, object };
    Type                                        type = Type::null;
    bool                                        boolean = false;
    std::string                                 text; // number (as written) or string
    std::vector<Json>                           array;
    std::map<std::string, std::shared_ptr<Json>> object;
    std::vector<std::string>                    keys; // object keys in order

    const Json &operator[](const std::string &key) const
    {
        const auto it = object.find(key);
        if (type != Type::object || it == object.end()) {
            throw std::runtime_error("missing key '" + key + "'");
        }
        return *it->second;
    }
    bool has(const std::string &key) const { return object.count(key) != 0; }
    std::int64_t integer() const
    {
        if (type != Type::number) {
            throw std::runtime_error("not a number");
        }
        return std::stoll(text);
    }
};

class JsonParser {
public:
    explicit JsonParser(const std::string &s) : s_(s) {}

    // Parses exactly one value, surrounded by optional whitespace.
    Json parse()
    {
        Json v = value();
        ws();
        if (pos_ != s_.size()) {
            fail("trailing characters");
        }
        return v;
    }

private:
    [[noreturn]] void fail(const std::string &what) const
    {
        throw std::runtime_error("invalid JSON at offset " + std::to_string(pos_) + ": " + what);
    }
    void ws()
    {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
            ++pos_;
        }
    }
    char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
    void expect(char c)
    {
        if (peek() != c) {
            fail(std::string("expected '") + c + "'");
        }
        ++pos_;
    }
    void literal(const char *word)
    {
        for (const char *p = word; *p; ++p) {
            expect(*p);
        }
    }
    Json value()
    {
        ws();
        Json v;
        const char c = peek();
        if (c == '{') {
            v.type = Json::Type::object;
            ++pos_;
            ws();
            if (peek() == '}') {
                ++pos_;
                return v;
            }
            for (;;) {
                ws();
                const std::string key = string();
                if (v.object.count(key)) {
                    fail("duplicate key '" + key + "'");
                }
                ws();
                expect(':');
                v.object[key] = std::make_shared<Json>(value());
                v.keys.push_back(key);
                ws();
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect('}');
                return v;
            }
        }
        if (c == '[') {
            v.type = Json::Type::array;
            ++pos_;
            ws();
            if (peek() == ']') {
                ++pos_;
                return v;
            }
            for (;;) {
                v.array.push_back(value());
                ws();
                if (peek() == ',') {
                    ++pos_;
                    continue;
                }
                expect(']');
                return v;
            }
        }
        if (c == '"') {
            v.type = Json::Type::string;
            v.text = string();
            return v;
        }
        if (c == 't') {
            literal("true");
            v.type    = Json::Type::boolean;
            v.boolean = true;
            return v;
        }
        if (c == 'f') {
            literal("false");
            v.type = Json::Type::boolean;
            return v;
        }
        if (c == 'n') {
            literal("null");
            return v;
        }
        v.type = Json::Type::number;
        v.text = number();
        return v;
    }
    std::string number()
    {
        const std::size_t start = pos_;
        if (peek() == '-') {
            ++pos_;
        }
        if (peek() == '0') {
            ++pos_;
        } else if (peek() >= '1' && peek() <= '9') {
            while (peek() >= '0' && peek() <= '9') {
                ++pos_;
            }
        } else {
            fail("expected a value");
        }
        if (peek() == '.') {
            ++pos_;
            if (!(peek() >= '0' && peek() <= '9')) {
                fail("digit expected");
            }
            while (peek() >= '0' && peek() <= '9') {
                ++pos_;
            }
        }
        if (peek() == 'e' || peek() == 'E') {
            ++pos_;
            if (peek() == '+' || peek() == '-') {
                ++pos_;
            }
            if (!(peek() >= '0' && peek() <= '9')) {
                fail("digit expected");
            }
            while (peek() >= '0' && peek() <= '9') {
                ++pos_;
            }
        }
        return s_.substr(start, pos_ - start);
    }
    std::string string()
    {
        expect('"');
        std::string out;
        for (;;) {
            if (pos_ >= s_.size()) {
                fail("unterminated string");
            }
            const char c = s_[pos_++];
            if (c == '"') {
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20) {
                fail("control character in string");
            }
            if (c != '\\') {
                out.push_back(c);
                continue;
            }
            const char e = peek();
            ++pos_;
            switch (e) {
            case '"': out.push_back('"'); break;
            case '\\': out.push_back('\\'); break;
            case '/': out.push_back('/'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'u': {
                if (pos_ + 4 > s_.size()) {
                    fail("short \\u escape");
                }
                const unsigned code = static_cast<unsigned>(std::stoul(s_.substr(pos_, 4), nullptr, 16));
                pos_ += 4;
                if (code >= 0x80) {
                    fail("non-ASCII \\u escapes are not needed by the tests");
                }
                out.push_back(static_cast<char>(code));
                break;
            }
            default: fail("bad escape");
            }
        }
    }

    const std::string &s_;
    std::size_t        pos_ = 0;
};

inline Json parse_json(const std::string &s) { return JsonParser(s).parse(); }

} // namespace slim_test

#endif
