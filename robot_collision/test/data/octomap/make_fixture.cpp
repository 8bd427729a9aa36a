// The octomap fixture of test/geometry/test_octomap.py, written by the OctoMap library itself
// (an oracle independent of robot_collision's decoder). Regenerate with cmeel-octomap:
//   P=$(python -c "import cmeel, os; print(cmeel.__path__[0] + '.prefix')")  # or the venv's
//   g++ -O1 make_fixture.cpp -I$P/include -L$P/lib -loctomap -loctomath -o /tmp/make_fixture
//   LD_LIBRARY_PATH=$P/lib /tmp/make_fixture .
// Writes tree.bt (OcTree::writeBinaryData, as octomap_msgs::binaryMapToMsg fills Octomap.data),
// tree_header.bt (writeBinaryConst: the .bt file with its header, as binaryMapToMsgData does)
// and leaves.txt (the occupied leaves: x y z size, m, from the library's leaf iterator).
#include <octomap/octomap.h>
#include <cstdio>
#include <fstream>
#include <string>

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : ".";
  octomap::OcTree tree(0.05);
  unsigned s = 12345u;
  auto next = [&s]() { s = s * 1103515245u + 12345u; return (s >> 8) & 0xffff; };
  for (int k = 0; k < 400; ++k) {  // scattered voxels, occupied and free, both sides of 0
    double x = ((int)(next() % 60) - 30) * 0.05 + 0.025;
    double y = ((int)(next() % 60) - 30) * 0.05 + 0.025;
    double z = ((int)(next() % 30) - 10) * 0.05 + 0.025;
    tree.updateNode(octomap::point3d(x, y, z), (next() % 4) != 0);
  }
  for (int i = 0; i < 8; ++i)  // an 8 x 8 x 8 occupied block: pruned into one leaf
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < 8; ++k)
        tree.updateNode(octomap::point3d(0.8 + 0.05 * i + 0.025, 0.4 + 0.05 * j + 0.025,
                                         0.05 * k + 0.025), true);
  tree.toMaxLikelihood();
  tree.prune();
  std::ofstream bt(dir + "/tree.bt", std::ios::binary);
  tree.writeBinaryData(bt);
  std::ofstream bth(dir + "/tree_header.bt", std::ios::binary);
  tree.writeBinaryConst(bth);
  FILE* f = std::fopen((dir + "/leaves.txt").c_str(), "w");
  for (auto it = tree.begin_leafs(); it != tree.end_leafs(); ++it)
    if (tree.isNodeOccupied(*it))
      std::fprintf(f, "%.6f %.6f %.6f %.6f\n", it.getX(), it.getY(), it.getZ(), it.getSize());
  std::fclose(f);
  return 0;
}
