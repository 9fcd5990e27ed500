"""ament_python build of camp_planner (also a plain pip-installable package)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "camp_planner"

setup(
    name=PACKAGE,
    version="0.1.0",
    package_dir={"": "src"},
    packages=find_packages(where="src", include=["camp_planner", "camp_planner.*"]),
    package_data={
        "camp_planner": ["py.typed", "data/*.pt"],
        "camp_planner.domains.dinner": ["*.pddl"],
    },
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.py")),
    ]
    # config/<domain>/ and config/ros/ keep their folders under share/, so a launch file finds
    # share/camp_planner/config/ros/namo_params.yaml as a source checkout has it.
    + [
        (f"share/{PACKAGE}/{folder}", sorted(glob(f"{folder}/*.yaml") + glob(f"{folder}/*.rviz")))
        for folder in sorted(glob("config/*"))
    ],
    install_requires=["setuptools"],
    # `--executor ray` (docs/design.md, "Running on a Ray cluster"); the same pin as
    # requirements.txt, which make setup installs so that CI tests it.
    extras_require={"ray": ["ray==2.60.0"]},
    zip_safe=True,
    maintainer="camp_planner engineers",
    maintainer_email="eng@camp-planner.dev",
    description="Learned context-specific abstract MDPs (CAMPs) for fast robot planning.",
    license="MIT",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "camp = camp_planner.cli:main",
            # the node executables launch/{namo,manip}.launch.py start (lib/camp_planner)
            "camp_planner = camp_planner.ros.camp_planner_node:main",
            "tamp_server = camp_planner.ros.tamp_server_node:main",
            "namo_sim = camp_planner.ros.namo_sim_node:main",
            "manip_sim = camp_planner.ros.manip_sim_node:main",
            "camp_lifecycle_manager = camp_planner.ros.lifecycle_manager:main",
            "scene_adapter = camp_planner.ros.scene_adapter_node:main",
            "camp_executor = camp_planner.ros.executor_node:main",
            "namo_robot = camp_planner.ros.robot_sim_node:main_namo",
            "manip_robot = camp_planner.ros.robot_sim_node:main_manip",
        ],
    },
)
