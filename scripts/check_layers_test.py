#!/usr/bin/env python3
"""Tests of scripts/check_layers.py on small trees written to a temporary folder."""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")


class CheckLayersTest(unittest.TestCase):
    def run_on(self, files):
        """Writes {path: text} under a fresh folder and runs the check there."""
        with tempfile.TemporaryDirectory() as root:
            for path, text in files.items():
                os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
                with open(os.path.join(root, path), "w") as f:
                    f.write(text)
            done = subprocess.run([sys.executable, SCRIPT, root], capture_output=True, text=True)
            return done.returncode, done.stdout + done.stderr

    def test_includes_that_point_down_pass(self):
        rc, out = self.run_on({
            "tensor/tensor.h": "#pragma once\n#include <vector>\n",
            "dispatcher/dispatcher.h": '#include "tensor/tensor.h"\n',
            "transforms/grad/derivative.h": '#include "dispatcher/dispatcher.h"\n',
            "ops/add.cpp": '#include "transforms/grad/derivative.h"\n#include "tensor/tensor.h"\n',
            "func/grad/grad.h": '#include "ops/add.h"\n',
            "ops/add.h": "#pragma once\n",
            "include/strata/strata.h": '#include "func/grad/grad.h"\n',
            "tests/grad_test.cpp": '#include <strata/strata.h>\n#include "examples/models.h"\n',
            "examples/models.h": '#include "strata/strata.h"\n',
        })
        self.assertEqual(rc, 0, out)
        self.assertIn("all pointing down", out)

    def test_an_include_of_a_higher_layer_fails_naming_file_line_and_folders(self):
        rc, out = self.run_on({
            "ops/creation.h": "#pragma once\n",
            "transforms/grad/engine.cpp": '#include <vector>\n\n#include "ops/creation.h"\n',
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("transforms/grad/engine.cpp:3: transforms/ includes ops/creation.h, "
                      "but ops/ is a higher layer than transforms/", out)

    def test_relative_angle_and_missing_includes_are_arrows_too(self):
        rc, out = self.run_on({
            "func/jacobian.h": "#pragma once\n",
            "kernels/cpu/a.cpp": '#include "../../func/jacobian.h"\n',
            "tensor/b.cpp": "  #  include <dispatcher/dispatcher.h>\n",
            "dispatcher/dispatcher.h": "#pragma once\n",
            "dispatcher/c.cpp": '#include "transforms/not_written_yet.h"\n',
        })
        self.assertEqual(rc, 1, out)
        self.assertIn("kernels/cpu/a.cpp:1: kernels/ includes ../../func/jacobian.h", out)
        self.assertIn("tensor/b.cpp:1: tensor/ includes dispatcher/dispatcher.h", out)
        self.assertIn("dispatcher/c.cpp:1: dispatcher/ includes transforms/not_written_yet.h", out)

    def test_a_folder_outside_the_order_fails(self):
        rc, out = self.run_on({"newlayer/x.cpp": '#include "tensor/tensor.h"\n',
                               "tensor/tensor.h": ""})
        self.assertEqual(rc, 1, out)
        self.assertIn("newlayer/x.cpp: folder newlayer/ is not in the layer order", out)

    def test_system_headers_comments_and_build_trees_are_ignored(self):
        rc, out = self.run_on({
            "tensor/tensor.h": '#include <Eigen/Core>\n#include "tbb/parallel_for.h"\n'
                               '// #include "func/grad/grad.h"\n',
            "func/grad/grad.h": "",
            "build/CMakeCache.txt": "",
            "build/tensor/generated.cpp": '#include "func/grad/grad.h"\n',
        })
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main()
