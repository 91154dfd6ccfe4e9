"""The PTX front end: text -> parsed statements and modules. Nothing here executes.

``ptx``     statements, operands, numbers (inline-asm text and function bodies);
``module``  module-level structure: directives, functions and their parameters, variables.
"""
