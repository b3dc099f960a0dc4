#!/usr/bin/env bash
# Run HERE (Debian, where scripts/setup.sh installed everything) before a GPU session: the GPU
# machine has nvcc, cuBLAS/cuDNN wheels and PyTorch but no OpenBLAS, libpng, libjpeg headers and
# no network. This packs what Kiln builds against (headers + shared libraries, xz-compressed) and
# the Fashion-MNIST files into .gpu-carry/ (git-ignored), about 40 MB. Then, from the session:
#   run(command="bash tests/gpu/run.sh", carry=[".gpu-carry"], timeout_s=540)
# tests/gpu/run.sh unpacks .gpu-carry/deps.tar.xz and points CMake and the loader at it.
set -euo pipefail
cd "$(dirname "$0")/../.."
C=.gpu-carry
rm -rf "$C"
mkdir -p "$C/deps/include" "$C/deps/lib"
grep -qx '/.gpu-carry/' .git/info/exclude 2>/dev/null || echo '/.gpu-carry/' >> .git/info/exclude
inc=$(dirname "$(find /usr/include -name cblas.h -path '*openblas*' | head -1)")
cp "$inc"/*.h "$C/deps/include/"
cp /usr/include/{zlib.h,zconf.h,png.h,pngconf.h,pnglibconf.h,jpeglib.h,jmorecfg.h,jerror.h} "$C/deps/include/"
cp /usr/include/x86_64-linux-gnu/jconfig.h "$C/deps/include/"
L=/usr/lib/x86_64-linux-gnu
for so in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libpng16.so.16 libjpeg.so.62 libz.so.1; do
  cp -L "$L/$so" "$C/deps/lib/$so"
done
( cd "$C/deps/lib" && ln -sf libopenblas.so.0 libopenblas.so && ln -sf libpng16.so.16 libpng16.so &&
  ln -sf libpng16.so libpng.so && ln -sf libjpeg.so.62 libjpeg.so && ln -sf libz.so.1 libz.so )
tar -C "$C" -cJf "$C/deps.tar.xz" deps
rm -rf "$C/deps"
mkdir -p "$C/fashion-mnist"
cp /usr/share/datasets/fashion-mnist/*.gz "$C/fashion-mnist/"
du -sh "$C" "$C"/*
