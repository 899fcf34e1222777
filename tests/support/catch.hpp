#pragma once
// Catch2 plus printers for the project's types, so a failing CHECK shows the error it carried.

#include "core/error.hpp"

#include <catch2/catch.hpp>

namespace Catch {
template <class T>
struct StringMaker<boost::system::result<T, spotshift::Error>> {
  static std::string convert(const boost::system::result<T, spotshift::Error>& r) {
    return r.has_value() ? std::string("Result(value)") : "Result(error: " + r.error().to_string() + ")";
  }
};
}  // namespace Catch
