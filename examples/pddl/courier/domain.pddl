; A courier robot carries parcels between rooms along corridors (an example of the general
; PDDL path: any STRIPS domain with types and action costs works the same way).
(define (domain courier)
  (:requirements :strips :typing :action-costs)
  (:types room parcel)
  (:predicates (robot-at ?r - room) (corridor ?a ?b - room)
               (parcel-at ?p - parcel ?r - room) (carrying ?p - parcel) (hand-free))
  (:functions (total-cost) - number (length ?a ?b - room) - number)
  (:action go
    :parameters (?from ?to - room)
    :precondition (and (robot-at ?from) (corridor ?from ?to))
    :effect (and (not (robot-at ?from)) (robot-at ?to)
                 (increase (total-cost) (length ?from ?to))))
  (:action pick
    :parameters (?p - parcel ?r - room)
    :precondition (and (robot-at ?r) (parcel-at ?p ?r) (hand-free))
    :effect (and (not (parcel-at ?p ?r)) (not (hand-free)) (carrying ?p)
                 (increase (total-cost) 1)))
  (:action drop
    :parameters (?p - parcel ?r - room)
    :precondition (and (robot-at ?r) (carrying ?p))
    :effect (and (parcel-at ?p ?r) (hand-free) (not (carrying ?p))
                 (increase (total-cost) 1))))
