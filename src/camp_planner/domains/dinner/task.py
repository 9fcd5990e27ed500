"""A dinner task: the meals' rewards and the world's size, and its PDDL problem.

Its own module so that the domain (which generates tasks) and the renders (which draw them)
both import it and not each other.
"""

from __future__ import annotations

from dataclasses import dataclass

MEALS = ("ramen", "sandwich", "steak")
_HOME_ITEMS = {
    "living-room": ("ramen-cup", "kettle", "car-keys"),
    "kitchen": (
        "bread",
        "ham",
        "cheese",
        "lettuce",
        "tomato",
        "mayo",
        "knife",
        "plate",
        "toaster",
        "pan",
        "pot",
        "salt",
        "butter",
    ),
    "store": ("beef", "potato"),
}
_WALKS = (
    ("living-room", "kitchen"),
    ("living-room", "hall"),
    ("hall", "kitchen"),
    ("hall", "garage"),
)


@dataclass(frozen=True)
class DinnerTask:
    """One dinner problem: the meals' rewards and the world's size."""

    task_id: int
    seed: int
    rewards: tuple[int, int, int]  # ramen, sandwich, steak
    step_cost: int
    max_reward: int
    extra_items: int
    extra_rooms: int
    items_per_room: int

    def problem_text(self) -> str:
        """The PDDL problem of this task."""
        rooms = [f"room{k}" for k in range(self.extra_rooms)]
        store_extras = [f"product{k}" for k in range(self.extra_items)]
        room_extras = {
            room: [f"{room}-thing{j}" for j in range(self.items_per_room)] for room in rooms
        }
        objects = []
        if rooms:
            objects.append(" ".join(rooms) + " - place")
        extras = store_extras + [i for items in room_extras.values() for i in items]
        if extras:
            objects.append(" ".join(extras) + " - item")
        init = ["(agent-at living-room)", f"(= (step-cost) {self.step_cost})"]
        for meal, reward in zip(MEALS, self.rewards, strict=True):
            init.append(f"(= (eat-cost {meal}) {self.max_reward - reward})")
        for a, b in [*_WALKS, *((r, "hall") for r in rooms)]:
            init += [f"(connected {a} {b})", f"(connected {b} {a})"]
        init += ["(road garage store)", "(road store garage)"]
        for place, items in _HOME_ITEMS.items():
            init += [f"(at {i} {place})" for i in items]
        init += [f"(at {i} store)" for i in store_extras]
        for room, things in room_extras.items():
            init += [f"(at {i} {room})" for i in things]
        return "\n".join(
            [
                f"(define (problem dinner-{self.seed}) (:domain dinner)",
                f"  (:objects {' '.join(objects)})" if objects else "  (:objects)",
                "  (:init (= (total-cost) 0)",
                *(f"    {fact}" for fact in init),
                "  )",
                "  (:goal (dinner-done))",
                "  (:metric minimize (total-cost)))",
            ]
        )
