-- binary-trees (the algorithm of the Computer Language Benchmarks Game): allocates and
-- frees millions of small tables. Lua allocates every object through realloc() and frees it
-- with free(), so this is an unmodified interpreter that spends about 30% of its
-- instructions in the allocator (callgrind, glibc 2.36). Used by tests/preload/run.sh
-- (output identical under libpagetier.so) and bench/preload/run.sh (overhead).
--
--   lua5.4 binary_trees.lua [max depth (default 16)]
local function bottom_up(depth)
  if depth == 0 then return {} end
  depth = depth - 1
  return { bottom_up(depth), bottom_up(depth) }
end

local function check(tree)
  if tree[1] then return 1 + check(tree[1]) + check(tree[2]) end
  return 1
end

local mindepth = 4
local maxdepth = math.max(mindepth + 2, tonumber(arg and arg[1]) or 16)

local stretch = maxdepth + 1
io.write(string.format("stretch tree of depth %d\t check: %d\n", stretch,
                       check(bottom_up(stretch))))
local long_lived = bottom_up(maxdepth)
for depth = mindepth, maxdepth, 2 do
  local iters = 1 << (maxdepth - depth + mindepth)
  local c = 0
  for _ = 1, iters do c = c + check(bottom_up(depth)) end
  io.write(string.format("%d\t trees of depth %d\t check: %d\n", iters, depth, c))
end
io.write(string.format("long lived tree of depth %d\t check: %d\n", maxdepth, check(long_lived)))
