#pragma once
// Kept in step with project(VERSION) in CMakeLists.txt; the tests check they agree.
#define MINIFLOAT_VERSION_MAJOR 0
#define MINIFLOAT_VERSION_MINOR 1
#define MINIFLOAT_VERSION_PATCH 0
#define MINIFLOAT_VERSION_STRING "0.1.0"
