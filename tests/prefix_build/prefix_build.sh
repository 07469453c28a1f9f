#!/usr/bin/env bash
# prefix_build.sh SOURCE_DIR WORK_DIR: the course builds and runs with its dependencies in a prefix
# that is not /usr, as on a machine where apt is not the way (a cluster's modules, spack, conda,
# a GPU box without network). Debian's packages of OpenBLAS (with its libgfortran and
# libquadmath), Catch2, nlohmann-json and CLI11 are unpacked into WORK_DIR/prefix (apt-get
# download + dpkg-deb -x: nothing is installed), the project is configured with CMAKE_PREFIX_PATH
# pointing there and the system's prefixes hidden from CMake (CMAKE_IGNORE_PREFIX_PATH), the core
# library and one small test are built (MPI and CUDA off, to keep it short), and then it checks:
#   - every dependency CMake found is the prefix's, and gemm.cpp is compiled with the prefix's
#     cblas.h directory;
#   - the test finds OpenBLAS and its libgfortran in the prefix at run time with no
#     LD_LIBRARY_PATH (the build's RPATH), and passes.
# Without apt-get, dpkg-deb or a network to download from: exit 77 (ctest: skipped), saying why.
set -euo pipefail
(($# == 2)) || { echo "usage: prefix_build.sh SOURCE_DIR WORK_DIR" >&2; exit 2; }
src="$1" work="$2"
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
start=$SECONDS

have() { command -v "$1" >/dev/null 2>&1; }
have apt-get || skip "no apt-get here to download Debian's packages with"
have dpkg-deb || skip "no dpkg-deb here to unpack Debian's packages with"
arch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || true)"
[[ -n "$arch" ]] || skip "cannot tell the multiarch triplet (dpkg-architecture, gcc -print-multiarch)"

rm -rf "$work"
mkdir -p "$work/debs" "$work/prefix"
packages=(libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0 catch2 nlohmann-json3-dev libcli11-dev)
# apt-get download writes into the current directory; as root it warns that the _apt user
# cannot write there (harmless).
if ! (cd "$work/debs" && apt-get download "${packages[@]}" >"$work/download.log" 2>&1); then
  tail -n 5 "$work/download.log"
  skip "apt-get download ${packages[*]} failed (no network or no package lists?)"
fi
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$work/prefix"; done
prefix="$work/prefix/usr"
echo "prefix: $prefix (${packages[*]}, unpacked in $((SECONDS - start)) s)"

# Configure: the prefix through CMAKE_PREFIX_PATH (Debian keeps OpenBLAS in a subdirectory, named
# through CMAKE_LIBRARY_PATH), /usr and /usr/local hidden from every find_*.
build="$work/build"
if ! env -u LD_LIBRARY_PATH -u CPATH -u LIBRARY_PATH \
    CMAKE_PREFIX_PATH="$prefix" CMAKE_LIBRARY_PATH="$prefix/lib/$arch/openblas-pthread" \
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DUSP_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
          -DCMAKE_IGNORE_PREFIX_PATH="/usr;/usr/local;/" >"$work/configure.log" 2>&1; then
  tail -n 30 "$work/configure.log"
  fail "configuring with the dependencies in $prefix failed (log: $work/configure.log)"
fi
grep -E '^-- ultrascale-cpp:' "$work/configure.log" | sed 's/^-- /  /'
grep -q 'BLAS=ON' "$work/configure.log" || fail "the configure did not find the prefix's OpenBLAS"

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
for var in nlohmann_json_DIR CLI11_DIR Catch2_DIR BLAS_openblas_LIBRARY USP_CBLAS_INCLUDE_DIR; do
  value="$(cache "$var")"
  [[ "$value" == "$work/prefix/"* ]] || fail "$var is '$value', not in the prefix $work/prefix"
  echo "  $var = ${value#"$work/"}"
done
grep -q -- "-isystem $prefix/include/$arch/openblas-pthread " "$build/compile_commands.json" ||
  fail "gemm.cpp is not compiled with the prefix's cblas.h directory ($prefix/include/$arch/openblas-pthread)"

jobs="${USP_JOBS:-$(nproc)}"
if ! cmake --build "$build" -j "$jobs" --target test_blas_gemm >"$work/build.log" 2>&1; then
  { grep -E 'error|Error' -A3 "$work/build.log" | head -n 40; } || true
  fail "building usp_core and test_blas_gemm against $prefix failed (log: $work/build.log)"
fi
echo "built usp_core and test_blas_gemm ($((SECONDS - start)) s so far)"

# Run time: no LD_LIBRARY_PATH; the loader must take OpenBLAS and libgfortran from the prefix.
exe="$build/tests/test_blas_gemm"
readelf -d "$exe" | grep -E 'R(UN)?PATH' | sed 's/^ */  /'
libs="$(env -u LD_LIBRARY_PATH ldd "$exe")"
for lib in libopenblas.so.0 libgfortran.so.5; do
  line="$(grep -F "$lib =>" <<<"$libs" || true)"
  echo "  $line"
  [[ "$line" == *"=> $work/prefix/"* ]] || fail "at run time $lib is not the prefix's: ${line:-not loaded}"
done
env -u LD_LIBRARY_PATH "$exe" || fail "test_blas_gemm failed"
echo "prefix build: configured, built and ran against $prefix in $((SECONDS - start)) s"
rm -rf "$work"
