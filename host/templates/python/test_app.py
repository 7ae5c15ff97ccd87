"""Tests of the plugin's logic in plain Python (no wasm needed): python3 -m unittest"""

import unittest

import app
from wasm_mcp import input_schema


class ShoutTest(unittest.TestCase):
    def test_upper_cases_and_repeats(self):
        self.assertEqual(app.{{crate}}_shout("hi", times=2), "HI HI")

    def test_schema_comes_from_the_signature(self):
        schema = input_schema(app.{{crate}}_shout)
        self.assertEqual(schema["required"], ["text"])
        self.assertEqual(schema["properties"]["times"]["type"], "integer")


if __name__ == "__main__":
    unittest.main()
