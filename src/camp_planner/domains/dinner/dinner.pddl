; Paper domain D2, written for camp_planner: make dinner. Ramen in the living room
; (2 actions), a sandwich in the kitchen (16), or a steak bought at the store and cooked in
; the kitchen (22). Every action costs the step penalty; eating meal ?m costs
; (eat-cost ?m) = (the largest meal reward) - (the reward of ?m), so minimising total cost
; maximises reward minus step penalties. Items for sale must be paid before they are cooked.
; Problems may add distractor items (anywhere) and extra rooms off the hall.
(define (domain dinner)
  (:requirements :strips :typing :action-costs)
  (:types place item meal - object
          food tool - item)
  (:constants
    living-room kitchen hall garage store - place
    ramen sandwich steak - meal
    ramen-cup bread ham cheese lettuce tomato mayo beef potato butter salt - food
    kettle knife plate toaster pan pot car-keys - tool)
  (:predicates
    (agent-at ?p - place)
    (connected ?a ?b - place)
    (road ?a ?b - place)
    (at ?i - item ?p - place)
    (holding ?i - item)
    (paid ?i - item)
    (sliced ?f - food)
    (washed ?f - food)
    (toasted ?f - food)
    (seasoned ?f - food)
    (cooked ?f - food)
    (mashed ?f - food)
    (ready ?m - meal)
    (dinner-done))
  (:functions
    (total-cost) - number
    (step-cost) - number
    (eat-cost ?m - meal) - number)

  (:action walk
    :parameters (?from ?to - place)
    :precondition (and (agent-at ?from) (connected ?from ?to))
    :effect (and (not (agent-at ?from)) (agent-at ?to) (increase (total-cost) (step-cost))))

  (:action drive
    :parameters (?from ?to - place)
    :precondition (and (agent-at ?from) (road ?from ?to) (holding car-keys))
    :effect (and (not (agent-at ?from)) (agent-at ?to) (increase (total-cost) (step-cost))))

  (:action take
    :parameters (?i - item ?p - place)
    :precondition (and (agent-at ?p) (at ?i ?p))
    :effect (and (not (at ?i ?p)) (holding ?i) (increase (total-cost) (step-cost))))

  (:action pay
    :parameters (?i - item)
    :precondition (and (agent-at store) (holding ?i))
    :effect (and (paid ?i) (increase (total-cost) (step-cost))))

  (:action make-ramen
    :parameters ()
    :precondition (and (agent-at living-room) (at ramen-cup living-room)
                       (at kettle living-room))
    :effect (and (not (at ramen-cup living-room)) (ready ramen)
                 (increase (total-cost) (step-cost))))

  (:action slice
    :parameters (?f - food)
    :precondition (and (agent-at kitchen) (holding ?f) (holding knife))
    :effect (and (sliced ?f) (increase (total-cost) (step-cost))))

  (:action wash
    :parameters (?f - food)
    :precondition (and (agent-at kitchen) (holding ?f))
    :effect (and (washed ?f) (increase (total-cost) (step-cost))))

  (:action toast
    :parameters (?f - food)
    :precondition (and (agent-at kitchen) (holding ?f) (sliced ?f) (at toaster kitchen))
    :effect (and (toasted ?f) (increase (total-cost) (step-cost))))

  (:action make-sandwich
    :parameters ()
    :precondition (and (agent-at kitchen) (toasted bread) (sliced cheese) (sliced tomato)
                       (washed lettuce) (holding ham) (holding mayo) (holding plate))
    :effect (and (ready sandwich) (increase (total-cost) (step-cost))))

  (:action season
    :parameters (?f - food)
    :precondition (and (agent-at kitchen) (holding ?f) (holding salt))
    :effect (and (seasoned ?f) (increase (total-cost) (step-cost))))

  (:action cook-beef
    :parameters ()
    :precondition (and (agent-at kitchen) (holding beef) (paid beef) (seasoned beef)
                       (holding pan))
    :effect (and (cooked beef) (increase (total-cost) (step-cost))))

  (:action boil-potato
    :parameters ()
    :precondition (and (agent-at kitchen) (holding potato) (paid potato) (holding pot))
    :effect (and (cooked potato) (increase (total-cost) (step-cost))))

  (:action mash
    :parameters ()
    :precondition (and (agent-at kitchen) (cooked potato) (holding butter))
    :effect (and (mashed potato) (increase (total-cost) (step-cost))))

  (:action make-steak-dinner
    :parameters ()
    :precondition (and (agent-at kitchen) (cooked beef) (mashed potato) (holding plate))
    :effect (and (ready steak) (increase (total-cost) (step-cost))))

  (:action eat
    :parameters (?m - meal)
    :precondition (ready ?m)
    :effect (and (dinner-done) (increase (total-cost) (eat-cost ?m)))))
