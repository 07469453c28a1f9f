# cmake -DFILES="a|b|c" -DOUT=path -P join_files.cmake: writes the files one after another into OUT
# (each followed by a blank line), in the order given.
string(REPLACE "|" ";" files "${FILES}")
get_filename_component(dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${dir}")
file(WRITE "${OUT}.tmp" "")
foreach(f IN LISTS files)
  file(READ "${f}" text)
  file(APPEND "${OUT}.tmp" "${text}\n")
endforeach()
file(RENAME "${OUT}.tmp" "${OUT}")
